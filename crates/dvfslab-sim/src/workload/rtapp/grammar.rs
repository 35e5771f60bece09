//! The rt-app grammar: `global`, `tasks`, phases and events, read from the relaxed JSON tree
//! into a checked model. Every value is checked where it is read, and an error names its JSON
//! path (`tasks.thread0.phases.p1.timer.period`) and line.
//!
//! What is read, following rt-app's `rt-app_parse_config.c` (our own code, same rules):
//! - events are the keys that *start with* an event name, in file order, repeated keys
//!   included (`run`, `run0`, `run_a` are all `run` events); `runtime` is tested before `run`
//!   and `memrun` before `mem`;
//! - other keys are read by exact name (the first occurrence wins, as after workgen's
//!   renaming); unknown ones are ignored, as rt-app ignores them;
//! - a task without `phases` is its own single phase: its `loop` is the phase's loop and the
//!   task then runs once (forever when `loop` is absent);
//! - the v0.x grammar (`exec`/`period`/`lock_order`, the `merge-*` examples) is translated to
//!   events in [`super::legacy`].

use std::collections::{HashMap, HashSet};
use std::fmt;

use super::json::{Node, Value};
use crate::sched::task::MAX_TASKS;

/// A grammar error: the JSON path and what is wrong with it (the line is in the message).
#[derive(Clone, Debug, PartialEq)]
pub struct GrammarError {
    pub path: String,
    pub message: String,
}

impl fmt::Display for GrammarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

pub type GResult<T> = Result<T, GrammarError>;

pub fn fail<T>(path: &str, node: &Node, message: impl fmt::Display) -> GResult<T> {
    Err(GrammarError { path: path.to_string(), message: format!("{message} (line {})", node.line) })
}

/// A whole file.
#[derive(Clone, Debug)]
pub struct Model {
    pub global: Global,
    /// Task templates in file order (`instance: 0` ones included: they are fork targets).
    pub tasks: Vec<TaskDef>,
}

#[derive(Clone, Debug)]
pub struct Global {
    /// Seconds; None (`-1`, the default) runs until every thread has finished.
    pub duration_s: Option<u64>,
    pub calibration: Calibration,
    pub default_policy: Sched,
    pub cumulative_slack: bool,
    pub pi_enabled: bool,
    pub io_device: String,
    /// Every other setting (logdir, ftrace, gnuplot, ...): accepted, recorded, no effect.
    pub recorded: Vec<(String, String)>,
}

/// What one `run` microsecond means (see [`super::lower`] for the work it becomes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Calibration {
    /// "CPUn": one µs of work at CPU n's maximum frequency and capacity.
    Cpu(usize),
    /// An integer: ns per calibration loop, taken as measured on CPU0 at its maximum frequency.
    NsPerLoop(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyKind {
    Other,
    Batch,
    Idle,
    Fifo,
    Rr,
    Deadline,
}

impl PolicyKind {
    fn parse(name: &str) -> Option<PolicyKind> {
        Some(match name {
            "SCHED_OTHER" => PolicyKind::Other,
            "SCHED_BATCH" => PolicyKind::Batch,
            "SCHED_IDLE" => PolicyKind::Idle,
            "SCHED_FIFO" => PolicyKind::Fifo,
            "SCHED_RR" => PolicyKind::Rr,
            "SCHED_DEADLINE" => PolicyKind::Deadline,
            _ => return None,
        })
    }
    pub fn is_rt(self) -> bool {
        matches!(self, PolicyKind::Fifo | PolicyKind::Rr)
    }
}

/// A policy and its priority: the nice value for OTHER/BATCH/IDLE, 1..99 for FIFO/RR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sched {
    pub kind: PolicyKind,
    pub priority: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loop {
    Forever,
    Times(u64),
}

#[derive(Clone, Debug)]
pub struct TaskDef {
    /// The thread name (repeated task keys get workgen's numbered names).
    pub name: String,
    pub path: String,
    pub instances: u32,
    pub delay_us: u64,
    pub loops: Loop,
    pub phases: Vec<PhaseDef>,
    pub sched: Sched,
    pub cpus: Option<Vec<usize>>,
    pub util_min: Option<u32>,
    pub util_max: Option<u32>,
}

#[derive(Clone, Debug)]
pub struct PhaseDef {
    pub name: String,
    pub path: String,
    pub loops: Loop,
    pub events: Vec<EventDef>,
    pub cpus: Option<Vec<usize>>,
    pub util_min: Option<u32>,
    pub util_max: Option<u32>,
}

#[derive(Clone, Debug)]
pub struct EventDef {
    pub path: String,
    /// The line the event's value starts on.
    pub line: u32,
    pub event: Event,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// Fixed work: µs at the calibration CPU's speed.
    Run(u64),
    /// Fixed wall time of running (µs).
    Runtime(u64),
    Sleep(u64),
    Timer {
        name: String,
        unique: bool,
        period_us: u64,
        absolute: bool,
    },
    Lock(String),
    Unlock(String),
    Wait {
        cond: String,
        mutex: String,
    },
    Signal(String),
    Broad(String),
    Sync {
        cond: String,
        mutex: String,
    },
    /// Wait on the wait queue of this name (the task's own name unless given).
    Suspend(String),
    Resume(String),
    SemPost(String),
    SemWait(String),
    Barrier(String),
    Fork(String),
    Yield,
    /// Bytes written into the thread's buffer.
    Mem(u64),
    MemRun {
        kind: MemRunKind,
        size: u64,
        count: u64,
    },
    /// Bytes written to the I/O device.
    IoRun(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemRunKind {
    Read,
    Write,
    Chase,
}

/// The event names, tested as key prefixes in rt-app's dispatch order (`runtime` before
/// `run`, `memrun` before `mem`).
const EVENT_PREFIXES: &[&str] = &[
    "runtime", "run", "sleep", "memrun", "mem", "iorun", "lock", "unlock", "signal", "broad", "wait", "sync",
    "barrier", "timer", "resume", "suspend", "yield", "fork", "sem_post", "sem_wait",
];

/// Non-event keys of a phase, and those a task adds (`period`/`deadline`: legacy deadline
/// parameters; `exec`, `lock_order`, `resources`: the v0.x grammar).
const PHASE_KEYS: &[&str] = &[
    "loop",
    "cpus",
    "policy",
    "priority",
    "dl-runtime",
    "dl-period",
    "dl-deadline",
    "util_min",
    "util_max",
    "nodes_membind",
    "taskgroup",
];
const TASK_KEYS: &[&str] = &["instance", "delay", "phases", "period", "deadline", "exec", "lock_order", "resources"];

/// Refuse keys that are neither events nor properties: rt-app ignores them, which turns a typo
/// (`"slep"`) into a silently different workload. Private extensions start with `x_` or `sim_`.
fn check_keys(path: &str, entries: &[(String, Node)], task: bool) -> GResult<()> {
    for (key, node) in entries {
        let known = event_prefix(key).is_some()
            || PHASE_KEYS.contains(&key.as_str())
            || (task && TASK_KEYS.contains(&key.as_str()))
            || key.starts_with("x_")
            || key.starts_with("sim_");
        if !known {
            let what = if task { "task" } else { "phase" };
            let props: Vec<&str> = PHASE_KEYS.iter().chain(if task { TASK_KEYS } else { &[] }).copied().collect();
            return fail(
                &join(path, key),
                node,
                format!(
                    "unknown key: neither an event ({}) nor a {what} property ({}); private keys start with x_",
                    EVENT_PREFIXES.join(", "),
                    props.join(", ")
                ),
            );
        }
    }
    Ok(())
}

/// The event a key names, if any.
pub fn event_prefix(key: &str) -> Option<&'static str> {
    EVENT_PREFIXES.iter().copied().find(|p| key.starts_with(p))
}

// ---------------------------------------------------------------------------------------------
// Typed access
// ---------------------------------------------------------------------------------------------

pub fn object<'a>(path: &str, node: &'a Node) -> GResult<&'a [(String, Node)]> {
    match &node.value {
        Value::Object(e) => Ok(e),
        v => fail(path, node, format!("expected an object, got {}", v.kind())),
    }
}

/// rt-app reads every number as a C `int` (json-c's `json_object_get_int`, which clamps larger
/// ones): a value beyond it is refused rather than clamped. It also keeps every time in µs, work
/// and count far from overflowing once scaled to ns and multiplied by instances.
pub const RTAPP_INT_MAX: i64 = i32::MAX as i64;

fn beyond_int<T>(path: &str, node: &Node, i: i64, unit: &str) -> GResult<T> {
    fail(path, node, format!("{i} is beyond rt-app's largest integer, {RTAPP_INT_MAX} ({unit})"))
}

pub fn int(path: &str, node: &Node, unit: &str) -> GResult<i64> {
    match node.value {
        Value::Int(i) if (-RTAPP_INT_MAX..=RTAPP_INT_MAX).contains(&i) => Ok(i),
        Value::Int(i) => beyond_int(path, node, i, unit),
        ref v => fail(path, node, format!("expected an integer ({unit}), got {}", v.kind())),
    }
}

pub fn uint(path: &str, node: &Node, unit: &str) -> GResult<u64> {
    match node.value {
        Value::Int(i) if (0..=RTAPP_INT_MAX).contains(&i) => Ok(i as u64),
        Value::Int(i) if i > 0 => beyond_int(path, node, i, unit),
        ref v => fail(path, node, format!("expected an integer >= 0 ({unit}), got {}", v.kind())),
    }
}

pub fn string<'a>(path: &str, node: &'a Node) -> GResult<&'a str> {
    match &node.value {
        Value::Str(s) if !s.is_empty() => Ok(s),
        v => fail(path, node, format!("expected a name (a non-empty string), got {}", v.kind())),
    }
}

fn boolean(path: &str, node: &Node) -> GResult<bool> {
    match node.value {
        Value::Bool(b) => Ok(b),
        ref v => fail(path, node, format!("expected true or false, got {}", v.kind())),
    }
}

/// The first entry named `key`.
pub fn get<'a>(entries: &'a [(String, Node)], key: &str) -> Option<&'a Node> {
    entries.iter().find(|(k, _)| k == key).map(|(_, n)| n)
}

pub fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Names for repeated keys the way workgen renames them: the second `x` of an object becomes
/// `x1`, and so on (a counter shared by the object, bumped past names already taken).
pub fn workgen_names(keys: &[&str]) -> Vec<String> {
    let mut taken: HashSet<String> = HashSet::with_capacity(keys.len());
    let mut names = Vec::with_capacity(keys.len());
    let mut next_id = 1;
    for key in keys {
        let mut name = key.to_string();
        if taken.contains(&name) {
            name = format!("{key}{next_id}");
            while taken.contains(&name) {
                next_id += 1;
                name = format!("{key}{next_id}");
            }
        }
        taken.insert(name.clone());
        names.push(name);
    }
    names
}

fn recorded(node: &Node) -> String {
    match &node.value {
        Value::Str(s) => s.clone(),
        v => v.kind(),
    }
}

// ---------------------------------------------------------------------------------------------
// File, global, tasks
// ---------------------------------------------------------------------------------------------

pub fn parse_model(root: &Node) -> GResult<Model> {
    let entries = object("(top level)", root)?;
    for (i, (key, node)) in entries.iter().enumerate() {
        if matches!(key.as_str(), "tasks" | "global" | "resources") && entries[..i].iter().any(|(k, _)| k == key) {
            return fail(key, node, format!("\"{key}\" is given twice"));
        }
    }
    let global = match get(entries, "global") {
        Some(g) => parse_global(g)?,
        None => Global::default(),
    };
    let resources = match get(entries, "resources") {
        Some(r) => super::legacy::parse_resources(r)?,
        None => Vec::new(),
    };
    let mut tasks = Vec::new();
    if let Some(node) = get(entries, "tasks") {
        let list = object("tasks", node)?;
        let names = workgen_names(&list.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>());
        for ((key, node), name) in list.iter().zip(names) {
            tasks.push(parse_task(&join("tasks", key), name, node, &global, &resources)?);
        }
    }
    check_references(&tasks)?;
    check_thread_count(&tasks)?;
    super::locks::check(&tasks)?;
    Ok(Model { global, tasks })
}

impl Default for Global {
    fn default() -> Global {
        Global {
            duration_s: None,
            calibration: Calibration::Cpu(0),
            default_policy: Sched { kind: PolicyKind::Other, priority: 0 },
            cumulative_slack: false,
            pi_enabled: false,
            io_device: "/dev/null".into(),
            recorded: Vec::new(),
        }
    }
}

fn parse_global(node: &Node) -> GResult<Global> {
    let mut g = Global::default();
    let entries = object("global", node)?;
    let mut seen: HashSet<&str> = HashSet::new();
    for (key, value) in entries {
        if !seen.insert(key) {
            continue; // the first occurrence wins
        }
        let path = join("global", key);
        match key.as_str() {
            "duration" => {
                let s = int(&path, value, "s")?;
                g.duration_s = (s > 0).then_some(s as u64);
            }
            "calibration" => {
                g.calibration = match &value.value {
                    Value::Int(ns) if *ns > 0 => Calibration::NsPerLoop(*ns as u64),
                    Value::Str(s) => match s.strip_prefix("CPU").and_then(|n| n.parse::<usize>().ok()) {
                        Some(cpu) => Calibration::Cpu(cpu),
                        None => return fail(&path, value, format!("expected \"CPUn\" or ns per loop, got \"{s}\"")),
                    },
                    v => {
                        return fail(&path, value, format!("expected \"CPUn\" or ns per loop (> 0), got {}", v.kind()))
                    }
                }
            }
            "default_policy" => {
                let kind = policy(&path, value)?;
                g.default_policy = Sched { kind, priority: default_priority(kind) };
            }
            "cumulative_slack" => g.cumulative_slack = boolean(&path, value)?,
            "pi_enabled" => g.pi_enabled = boolean(&path, value)?,
            "io_device" => g.io_device = string(&path, value)?.to_string(),
            "mem_buffer_size" => {
                uint(&path, value, "bytes")?;
                g.recorded.push((key.clone(), recorded(value)));
            }
            _ => g.recorded.push((key.clone(), recorded(value))),
        }
    }
    Ok(g)
}

fn policy(path: &str, node: &Node) -> GResult<PolicyKind> {
    let name = string(path, node)?;
    match PolicyKind::parse(name) {
        Some(kind) => Ok(kind),
        None => fail(
            path,
            node,
            format!(
                "unknown policy \"{name}\" (known: SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, SCHED_FIFO, SCHED_RR, \
                 SCHED_DEADLINE)"
            ),
        ),
    }
}

/// rt-app's defaults: nice 0 for the fair and deadline classes, priority 10 for RT.
fn default_priority(kind: PolicyKind) -> i64 {
    if kind.is_rt() {
        10
    } else {
        0
    }
}

/// The task-level policy: `policy` (or the global default) and `priority`, checked for range.
fn parse_sched(path: &str, entries: &[(String, Node)], default: Sched) -> GResult<Sched> {
    let kind = match get(entries, "policy") {
        Some(n) => policy(&join(path, "policy"), n)?,
        None => default.kind,
    };
    let priority = match get(entries, "priority") {
        Some(n) => {
            let p = int(&join(path, "priority"), n, "priority")?;
            check_priority(&join(path, "priority"), n, kind, p)?;
            p
        }
        None if kind == default.kind => default.priority,
        None => default_priority(kind),
    };
    Ok(Sched { kind, priority })
}

fn check_priority(path: &str, node: &Node, kind: PolicyKind, p: i64) -> GResult<()> {
    match kind {
        PolicyKind::Fifo | PolicyKind::Rr if !(1..=99).contains(&p) => {
            fail(path, node, format!("expected an RT priority in 1..99, got {p}"))
        }
        PolicyKind::Other | PolicyKind::Batch | PolicyKind::Idle if !(-20..=19).contains(&p) => {
            fail(path, node, format!("expected a nice value in -20..19, got {p}"))
        }
        _ => Ok(()),
    }
}

pub fn parse_loop(path: &str, node: &Node) -> GResult<Loop> {
    match int(path, node, "count")? {
        -1 => Ok(Loop::Forever),
        n if n < 1 => fail(path, node, format!("expected -1 (forever) or a count >= 1, got {n}")),
        n => Ok(Loop::Times(n as u64)),
    }
}

fn parse_cpus(path: &str, node: &Node) -> GResult<Vec<usize>> {
    let Value::Array(items) = &node.value else {
        return fail(path, node, format!("expected an array of CPU numbers, got {}", node.value.kind()));
    };
    if items.is_empty() {
        return fail(path, node, "expected at least one CPU");
    }
    let mut cpus: Vec<usize> =
        items.iter().map(|n| uint(path, n, "CPU number").map(|c| c as usize)).collect::<GResult<_>>()?;
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

fn parse_uclamp(path: &str, node: &Node) -> GResult<Option<u32>> {
    match int(path, node, "0..1024")? {
        -1 => Ok(None),
        v @ 0..=1024 => Ok(Some(v as u32)),
        v => fail(path, node, format!("expected 0..1024 (or -1: unchanged), got {v}")),
    }
}

/// Keys read at task and phase level besides events and `loop`.
struct Props {
    cpus: Option<Vec<usize>>,
    util_min: Option<u32>,
    util_max: Option<u32>,
}

fn parse_props(path: &str, entries: &[(String, Node)]) -> GResult<Props> {
    let cpus = get(entries, "cpus").map(|n| parse_cpus(&join(path, "cpus"), n)).transpose()?;
    let util_min = get(entries, "util_min").map(|n| parse_uclamp(&join(path, "util_min"), n)).transpose()?.flatten();
    let util_max = get(entries, "util_max").map(|n| parse_uclamp(&join(path, "util_max"), n)).transpose()?.flatten();
    for key in ["dl-runtime", "dl-period", "dl-deadline"] {
        if let Some(n) = get(entries, key) {
            uint(&join(path, key), n, "µs")?;
        }
    }
    if let Some(n) = get(entries, "taskgroup") {
        if !matches!(&n.value, Value::Str(s) if s.is_empty() || s.starts_with('/')) {
            return fail(&join(path, "taskgroup"), n, "expected a cgroup path starting with '/'");
        }
    }
    if let Some(n) = get(entries, "nodes_membind") {
        parse_cpus(&join(path, "nodes_membind"), n)?;
    }
    Ok(Props { cpus, util_min, util_max })
}

fn parse_task(
    path: &str,
    name: String,
    node: &Node,
    global: &Global,
    resources: &[super::legacy::Resource],
) -> GResult<TaskDef> {
    let entries = object(path, node)?;
    check_keys(path, entries, true)?;
    let instances = match get(entries, "instance") {
        Some(n) => {
            let count = uint(&join(path, "instance"), n, "threads")?;
            if count > MAX_TASKS as u64 {
                return fail(&join(path, "instance"), n, too_many_threads(count));
            }
            count as u32
        }
        None => 1,
    };
    let delay_us = get(entries, "delay").map(|n| uint(&join(path, "delay"), n, "µs")).transpose()?.unwrap_or(0);
    let sched = parse_sched(path, entries, global.default_policy)?;
    let props = parse_props(path, entries)?;
    let phases_node = get(entries, "phases");
    // The v0.x grammar: `exec` and no events (its `lock_order` looks like a `lock` event).
    let legacy = phases_node.is_none()
        && get(entries, "exec").is_some()
        && entries.iter().all(|(k, _)| event_prefix(k).is_none() || k == "lock_order");

    let (phases, loops) = if let Some(phases_node) = phases_node {
        if let Some((key, n)) = entries.iter().find(|(k, _)| event_prefix(k).is_some()) {
            return fail(
                &join(path, key),
                n,
                "events next to \"phases\" are not run by rt-app; move them into a phase",
            );
        }
        let ppath = join(path, "phases");
        let list = object(&ppath, phases_node)?;
        if list.is_empty() {
            return fail(&ppath, phases_node, "expected at least one phase");
        }
        let names = workgen_names(&list.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>());
        let mut phases = Vec::new();
        for ((key, pnode), pname) in list.iter().zip(names) {
            phases.push(parse_phase(&join(&ppath, key), pname, pnode, sched)?);
        }
        let loops =
            get(entries, "loop").map(|n| parse_loop(&join(path, "loop"), n)).transpose()?.unwrap_or(Loop::Forever);
        (phases, loops)
    } else if legacy {
        super::legacy::parse_thread(path, entries, resources)?
    } else {
        // The task object is its single phase: `loop` counts the phase, which runs once.
        let loop_node = get(entries, "loop");
        let phase_loops = loop_node.map(|n| parse_loop(&join(path, "loop"), n)).transpose()?.unwrap_or(Loop::Times(1));
        let events = parse_events(path, entries)?;
        if events.is_empty() {
            return fail(path, node, "no events: a task needs at least one event (run, sleep, timer, ...)");
        }
        let phase = PhaseDef {
            name: name.clone(),
            path: path.to_string(),
            loops: phase_loops,
            events,
            cpus: None,
            util_min: None,
            util_max: None,
        };
        (vec![phase], if loop_node.is_some() { Loop::Times(1) } else { Loop::Forever })
    };
    let mut task = TaskDef {
        name,
        path: path.to_string(),
        instances,
        delay_us,
        loops,
        phases,
        sched,
        cpus: props.cpus,
        util_min: props.util_min,
        util_max: props.util_max,
    };
    resolve_own_names(&mut task);
    Ok(task)
}

/// A phase: its loop, events and the properties it changes. A phase may change uclamp and
/// affinity; a different policy or RT priority needs a core feature we do not have yet.
fn parse_phase(path: &str, name: String, node: &Node, task_sched: Sched) -> GResult<PhaseDef> {
    let entries = object(path, node)?;
    check_keys(path, entries, false)?;
    let loops = get(entries, "loop").map(|n| parse_loop(&join(path, "loop"), n)).transpose()?.unwrap_or(Loop::Times(1));
    let props = parse_props(path, entries)?;
    if get(entries, "policy").is_some() || get(entries, "priority").is_some() {
        let s = parse_sched(path, entries, task_sched)?;
        let changes = s.kind != task_sched.kind || (s.kind.is_rt() && s.priority != task_sched.priority);
        if changes {
            let key = if get(entries, "policy").is_some() { "policy" } else { "priority" };
            let n = get(entries, key).expect("present");
            return fail(
                &join(path, key),
                n,
                "changing the policy or RT priority at a phase is not supported yet (set it at task level)",
            );
        }
    }
    let events = parse_events(path, entries)?;
    if events.is_empty() {
        return fail(path, node, "no events: a phase needs at least one event (run, sleep, timer, ...)");
    }
    Ok(PhaseDef {
        name,
        path: path.to_string(),
        loops,
        events,
        cpus: props.cpus,
        util_min: props.util_min,
        util_max: props.util_max,
    })
}

fn parse_events(path: &str, entries: &[(String, Node)]) -> GResult<Vec<EventDef>> {
    let mut events = Vec::new();
    for (key, node) in entries {
        if let Some(prefix) = event_prefix(key) {
            let epath = join(path, key);
            let event = parse_event(&epath, prefix, node)?;
            events.push(EventDef { path: epath, line: node.line, event });
        }
    }
    Ok(events)
}

/// One event from its key's prefix and its value.
fn parse_event(path: &str, prefix: &str, node: &Node) -> GResult<Event> {
    let name = || string(path, node).map(str::to_string);
    Ok(match prefix {
        "run" => Event::Run(uint(path, node, "µs")?),
        "runtime" => Event::Runtime(uint(path, node, "µs")?),
        "sleep" => Event::Sleep(uint(path, node, "µs")?),
        "mem" => Event::Mem(uint(path, node, "bytes")?),
        "iorun" => Event::IoRun(uint(path, node, "bytes")?),
        "memrun" => parse_memrun(path, node)?,
        "lock" => Event::Lock(name()?),
        "unlock" => Event::Unlock(name()?),
        "signal" => Event::Signal(name()?),
        "broad" => Event::Broad(name()?),
        "wait" | "sync" => {
            let entries = object(path, node)?;
            let field = |key: &str| match get(entries, key) {
                Some(n) => string(&join(path, key), n).map(str::to_string),
                None => fail(&join(path, key), node, format!("missing \"{key}\"")),
            };
            let (cond, mutex) = (field("ref")?, field("mutex")?);
            if prefix == "wait" {
                Event::Wait { cond, mutex }
            } else {
                Event::Sync { cond, mutex }
            }
        }
        "barrier" => Event::Barrier(name()?),
        "timer" => parse_timer(path, node)?,
        "resume" => Event::Resume(name()?),
        "suspend" => match &node.value {
            // rt-app ignores the value (the task's own name); older rt-app and the examples
            // name a shared wait queue with it. An empty or missing value is the own name.
            Value::Str(s) => Event::Suspend(s.clone()),
            Value::Missing | Value::Null => Event::Suspend(String::new()),
            v => return fail(path, node, format!("expected a name or nothing, got {}", v.kind())),
        },
        "yield" => match &node.value {
            Value::Str(_) | Value::Missing | Value::Null => Event::Yield,
            v => return fail(path, node, format!("expected a string or nothing, got {}", v.kind())),
        },
        "fork" => Event::Fork(name()?),
        "sem_post" => Event::SemPost(name()?),
        "sem_wait" => Event::SemWait(name()?),
        _ => unreachable!("every prefix is handled"),
    })
}

fn parse_timer(path: &str, node: &Node) -> GResult<Event> {
    let entries = object(path, node)?;
    let name = match get(entries, "ref") {
        Some(n) => string(&join(path, "ref"), n)?.to_string(),
        None => "unknown".to_string(), // rt-app's default: one timer shared by all such events
    };
    let period_us = get(entries, "period").map(|n| uint(&join(path, "period"), n, "µs")).transpose()?.unwrap_or(0);
    let absolute = match get(entries, "mode") {
        None => false,
        Some(n) => match string(&join(path, "mode"), n)? {
            "relative" => false,
            "absolute" => true,
            other => {
                return fail(&join(path, "mode"), n, format!("expected \"relative\" or \"absolute\", got \"{other}\""))
            }
        },
    };
    Ok(Event::Timer { unique: name.starts_with("unique"), name, period_us, absolute })
}

fn parse_memrun(path: &str, node: &Node) -> GResult<Event> {
    let entries = object(path, node)?;
    let kind = match get(entries, "type") {
        None => return fail(&join(path, "type"), node, "missing \"type\" (read, write or chase)"),
        Some(n) => match string(&join(path, "type"), n)? {
            "read" => MemRunKind::Read,
            "write" => MemRunKind::Write,
            "chase" => MemRunKind::Chase,
            other => return fail(&join(path, "type"), n, format!("expected read, write or chase, got \"{other}\"")),
        },
    };
    let size = get(entries, "size").map(|n| uint(&join(path, "size"), n, "bytes")).transpose()?.unwrap_or(0);
    let count = get(entries, "count").map(|n| uint(&join(path, "count"), n, "accesses")).transpose()?.unwrap_or(0);
    if let Some(n) = get(entries, "stride") {
        if uint(&join(path, "stride"), n, "bytes")? == 0 {
            return fail(&join(path, "stride"), n, "expected a stride > 0");
        }
    }
    if let Some(n) = get(entries, "pattern") {
        let p = string(&join(path, "pattern"), n)?;
        if p != "random" && p != "sequential" {
            return fail(&join(path, "pattern"), n, format!("expected random or sequential, got \"{p}\""));
        }
    }
    if let Some(n) = get(entries, "ref") {
        string(&join(path, "ref"), n)?;
    }
    Ok(Event::MemRun { kind, size, count })
}

/// `suspend` with no name waits on the task's own wait queue.
fn resolve_own_names(task: &mut TaskDef) {
    for phase in &mut task.phases {
        for e in &mut phase.events {
            if let Event::Suspend(name) = &mut e.event {
                if name.is_empty() {
                    *name = task.name.clone();
                }
            }
        }
    }
}

/// Names that must exist across the file: fork targets, and barriers that someone runs.
fn check_references(tasks: &[TaskDef]) -> GResult<()> {
    let events = || tasks.iter().flat_map(|t| t.phases.iter().flat_map(move |p| p.events.iter().map(move |e| (t, e))));
    let names: HashSet<&str> = tasks.iter().map(|t| t.name.as_str()).collect();
    for (_, e) in events() {
        if let Event::Fork(target) = &e.event {
            if !names.contains(target.as_str()) {
                let known: Vec<&str> = tasks.iter().map(|t| t.name.as_str()).collect();
                return Err(GrammarError {
                    path: e.path.clone(),
                    message: format!("forks \"{target}\", which is not a task (tasks: {})", known.join(", ")),
                });
            }
        }
    }
    let parties = barrier_parties(tasks);
    for (_, e) in events() {
        if let Event::Barrier(name) = &e.event {
            if parties[name] == 0 {
                return Err(GrammarError {
                    path: e.path.clone(),
                    message: format!(
                        "barrier \"{name}\" is only used by tasks with instance 0: rt-app counts a barrier's \
                         parties from the tasks started at launch, so it cannot be combined with fork"
                    ),
                });
            }
        }
    }
    Ok(())
}

fn too_many_threads(count: u64) -> String {
    format!("{count} threads: a run creates at most {MAX_TASKS} (instances and forks together)")
}

/// How many times each pass of a thread runs an event of phase `pi`, or None if the thread
/// never gets there or runs it forever (a phase that loops forever is the thread's last).
pub fn runs_per_thread(t: &TaskDef, pi: usize) -> Option<u64> {
    if t.phases[..pi].iter().any(|p| p.loops == Loop::Forever) {
        return None;
    }
    match (t.loops, t.phases[pi].loops) {
        (Loop::Times(a), Loop::Times(b)) => Some(a.saturating_mul(b)),
        _ => None,
    }
}

/// Refuse a file that creates more than [`MAX_TASKS`] threads, counting what is known before
/// the run: the instances, and the forks their threads make a known number of times. Forks in
/// a loop without end, and forks by forked threads, are bounded by the run itself.
fn check_thread_count(tasks: &[TaskDef]) -> GResult<()> {
    let mut total: u64 = 0;
    let mut add = |count: u64, path: String| {
        total = total.saturating_add(count);
        if total > MAX_TASKS as u64 {
            return Err(GrammarError { path, message: too_many_threads(total) });
        }
        Ok(())
    };
    for t in tasks {
        add(t.instances.into(), join(&t.path, "instance"))?;
        for (pi, p) in t.phases.iter().enumerate() {
            let Some(runs) = runs_per_thread(t, pi) else { continue };
            for e in p.events.iter().filter(|e| matches!(e.event, Event::Fork(_))) {
                add(runs.saturating_mul(t.instances.into()), e.path.clone())?;
            }
        }
    }
    Ok(())
}

/// Each barrier's parties: every reference to it, times the instances of the task holding it.
pub fn barrier_parties(tasks: &[TaskDef]) -> HashMap<String, u32> {
    let mut parties: HashMap<String, u32> = HashMap::new();
    for t in tasks {
        for e in t.phases.iter().flat_map(|p| &p.events) {
            if let Event::Barrier(name) = &e.event {
                let n = parties.entry(name.clone()).or_default();
                *n = n.saturating_add(t.instances);
            }
        }
    }
    parties
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(text: &str) -> GResult<Model> {
        parse_model(&super::super::json::parse(text).unwrap())
    }

    #[test]
    fn events_by_prefix_in_order_with_repeats() {
        let m =
            model(r#"{"tasks": {"t": {"loop": 2, "run": 10, "sleep_a": 5, "run": 20, "runtime0": 7, "cpus": [1]}}}"#)
                .unwrap();
        let t = &m.tasks[0];
        let ev: Vec<_> = t.phases[0].events.iter().map(|e| e.event.clone()).collect();
        assert_eq!(ev, vec![Event::Run(10), Event::Sleep(5), Event::Run(20), Event::Runtime(7)]);
        assert_eq!((t.loops, t.phases[0].loops), (Loop::Times(1), Loop::Times(2)));
        assert_eq!(t.cpus, Some(vec![1]));
    }

    #[test]
    fn workgen_renames_like_workgen() {
        assert_eq!(workgen_names(&["run", "run", "sleep", "sleep", "run"]), ["run", "run1", "sleep", "sleep1", "run2"]);
    }

    #[test]
    fn errors_name_the_json_path() {
        let cases = [
            (
                r#"{"tasks": {"t0": {"phases": {"p1": {"timer": {"ref": "a", "period": "x"}}}}}}"#,
                "tasks.t0.phases.p1.timer.period: expected an integer >= 0 (µs), got \"x\"",
            ),
            (r#"{"tasks": {"t0": {"run": -1}}}"#, "tasks.t0.run: expected an integer >= 0 (µs), got -1"),
            (r#"{"tasks": {"t0": {"loop": 1}}}"#, "tasks.t0: no events"),
            (r#"{"tasks": {"t0": {"run": 1, "policy": "SCHED_WHAT"}}}"#, "tasks.t0.policy: unknown policy"),
            (r#"{"tasks": {"t0": {"run": 1, "fork": "nobody"}}}"#, "tasks.t0.fork: forks \"nobody\""),
            (r#"{"tasks": {"t0": {"run": 1, "lock": 3}}}"#, "tasks.t0.lock: expected a name"),
            (r#"{"tasks": {"t0": {"run": 1, "phases": {"p": {"run": 1}}}}}"#, "tasks.t0.run: events next to"),
            (r#"{"global": {"calibration": "GPU0"}, "tasks": {}}"#, "global.calibration: expected \"CPUn\""),
            (
                r#"{"tasks": {"t0": {"run": 1, "policy": "SCHED_FIFO", "priority": 0}}}"#,
                "tasks.t0.priority: expected an RT priority",
            ),
            (
                r#"{"tasks": {"t0": {"run": 1, "slep": 5}}}"#,
                "tasks.t0.slep: unknown key: neither an event (runtime, run,",
            ),
            (r#"{"tasks": {"t0": {"phases": {"p": {"run": 1, "exec": 5}}}}}"#, "tasks.t0.phases.p.exec: unknown key"),
        ];
        for (text, want) in cases {
            let e = model(text).unwrap_err().to_string();
            assert!(e.starts_with(want), "{text}\n  got: {e}\n want: {want}");
        }
    }

    #[test]
    fn barrier_parties_count_references_times_instances() {
        let m = model(r#"{"tasks": {"a": {"instance": 3, "barrier": "b", "run": 1}, "b": {"barrier": "b", "run": 1, "barrier1": "b"}}}"#)
            .unwrap();
        assert_eq!(barrier_parties(&m.tasks)["b"], 5);
    }
}
