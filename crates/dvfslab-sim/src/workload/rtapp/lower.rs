//! From the checked model to task programs: each thread template becomes one program, its
//! phases unrolled in order (the op language has jumps but no counters, so a finite `loop`
//! is written out), every event mapped to operations, with marks around each phase
//! iteration, each `run` and each `timer` for rt-app's per-phase log.
//!
//! Event → operations (names are interned per kind; `H(c)` is the hidden mutex standing in
//! for condition `c`, see "Conditions" below):
//!
//! | event | operations |
//! |---|---|
//! | `run t` | `Run` of the work t µs take on the calibration CPU at its max frequency |
//! | `runtime t` | `RunFor t` |
//! | `sleep t` | `Sleep t` (nothing for 0) |
//! | `timer {period P, mode}` | `Timer P mode` (× users for a shared ref), then `TimerWakeUp` |
//! | `lock m` / `unlock m` | `Lock m` / `Unlock m` |
//! | `wait {c, m}` | `Unlock m`, `Lock H(c)`, `Lock m` (pthread_cond_wait) |
//! | `signal c` | `Unlock H(c)` |
//! | `broad c` | `Unlock H(c)` once per thread that waits on `c` |
//! | `sync {c, m}` | `signal c` then `wait {c, m}` |
//! | `suspend [n]` | `Lock H(n)` (n: the value, else the task's own name) |
//! | `resume n` | as `broad n` |
//! | `sem_post s` / `sem_wait s` | `Post s` / `Wait s` (a counting channel) |
//! | `barrier b` | `Barrier b`, parties = references × instances |
//! | `fork t` | `Spawn t` |
//! | `yield` | `Yield` |
//! | `mem b`, `memrun` | `RunFor` of a frequency-insensitive stall (see the constants) |
//! | `iorun b` | `Io` of b bytes on the `io_device` |
//!
//! Conditions: pthread condition signals are lost when nobody waits, and a broadcast wakes
//! every waiter. The op language has only counting channels (a post is never lost), so a
//! condition is modelled with a mutex that its waiters block on: `signal` releases it, which
//! hands it to the first waiter (waking it) or leaves it free. One thread holds it from the
//! start (the first instance that waits on it), so the first wait blocks. A signal nobody
//! waits for is thus remembered once (at most one, never counted up as with a channel); a
//! broadcast releases it once per potential waiter.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use super::grammar::{
    barrier_parties, Calibration, Event, GResult, GrammarError, Loop, MemRunKind, Model, PhaseDef, PolicyKind, TaskDef,
};
use crate::sched::task::{Amount, Mark, Op, TimerMode};
use crate::workload::SchedPolicy;

/// Finite loops are unrolled; past this many operations a program is refused.
pub const MAX_PROGRAM_OPS: usize = 1 << 20;
/// `mem`: bytes written per ns by memset into a buffer of a few MB (≈ 10 GB/s).
pub const MEM_WRITE_BYTES_PER_NS: f64 = 10.0;
/// `memrun` read/write: rt-app touches one byte at a time (≈ 2 bytes per ns).
pub const MEMRUN_BYTE_NS: f64 = 0.5;
/// `memrun` chase: one dependent load hits in cache up to this buffer size, else DRAM.
pub const CHASE_CACHE_BYTES: u64 = 1 << 20;
pub const CHASE_HIT_NS: f64 = 5.0;
pub const CHASE_MISS_NS: f64 = 90.0;
/// `iorun`: bytes written to the I/O device per ns (≈ 1 GB/s).
pub const IO_BYTES_PER_NS: f64 = 1.0;

/// What a latency slot measures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SlotKind {
    /// One phase iteration, start to end (rt-app's `period` column).
    Period,
    /// One `run` or `runtime` event; `ref_ns` is its duration at calibration speed.
    Run { ref_ns: f64 },
    /// Before each `timer` of the phase: the time since the task's previous timer release (or
    /// its start). The timer's slack is its period minus this: rt-app's `t_next - now`, negative
    /// when the activation is late.
    TimerBusy,
}

#[derive(Clone, Debug)]
pub struct Slot {
    pub phase: usize,
    pub kind: SlotKind,
}

/// One phase of one task template, with its configured figures.
#[derive(Clone, Debug)]
pub struct PhaseInfo {
    pub task: String,
    pub phase: String,
    /// Sum of the configured run and runtime µs (rt-app's `c_duration`).
    pub c_duration_us: u64,
    /// Sum of the configured timer periods (`c_period`).
    pub c_period_us: u64,
    /// The same with each shared timer's period times its users (how often it fires here).
    pub c_period_eff_us: u64,
    /// Work per iteration in thousands of calibration loops (`perf`), for an integer
    /// calibration; None for "CPUn".
    pub perf: Option<f64>,
    /// Timer events per iteration (with a period > 0).
    pub timers: u32,
    pub period_slot: u32,
}

/// Where each metric figure is recorded: `RunStats::latencies_ns[slot]`.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    pub slots: Vec<Slot>,
    pub phases: Vec<PhaseInfo>,
}

/// A thread started at launch.
#[derive(Clone, Debug)]
pub struct Instance {
    pub name: String,
    pub program: usize,
    pub start_ns: u64,
    pub policy: SchedPolicy,
    /// The nice value of a SCHED_OTHER/BATCH/IDLE thread (its `priority`), else 0.
    pub nice: i8,
    pub cpus: Option<Vec<usize>>,
    pub uclamp: (Option<u32>, Option<u32>),
}

/// Programs with `Run` work in reference ns (scaled to cycles per platform).
#[derive(Clone, Debug, Default)]
pub struct Built {
    pub programs: Vec<Vec<Op>>,
    pub instances: Vec<Instance>,
    /// Program of each template, for `Op::Spawn`, by template index (forked programs table).
    pub fork_table: Vec<usize>,
    pub uses_io: bool,
}

pub fn policy_of(kind: PolicyKind, priority: i64) -> SchedPolicy {
    match kind {
        PolicyKind::Other => SchedPolicy::Normal,
        PolicyKind::Batch => SchedPolicy::Batch,
        PolicyKind::Idle => SchedPolicy::Idle,
        PolicyKind::Fifo => SchedPolicy::Fifo(priority as u8),
        PolicyKind::Rr => SchedPolicy::Rr(priority as u8),
        // Deadline tasks run before every RT task: the highest FIFO priority, no throttling.
        PolicyKind::Deadline => SchedPolicy::Fifo(99),
    }
}

/// A fair thread's nice value: its priority, checked to -20..19 when the file was read.
pub fn nice_of(kind: PolicyKind, priority: i64) -> i8 {
    if kind.is_rt() || kind == PolicyKind::Deadline {
        0
    } else {
        priority.clamp(-20, 19) as i8
    }
}

/// Interned names of one kind of object, numbered in order of first use.
#[derive(Default)]
struct Names(HashMap<String, u32>);

impl Names {
    fn id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.0.get(name) {
            return id;
        }
        let id = self.0.len() as u32;
        self.0.insert(name.to_string(), id);
        id
    }
}

/// Counts by name, remembering the order in which names first appeared.
#[derive(Default)]
struct Tally {
    order: Vec<String>,
    counts: HashMap<String, u32>,
}

impl Tally {
    fn bump(&mut self, name: &str, by: u32) {
        match self.counts.get_mut(name) {
            Some(c) => *c = c.saturating_add(by),
            None => {
                self.order.push(name.to_string());
                self.counts.insert(name.to_string(), by);
            }
        }
    }

    fn get(&self, name: &str) -> Option<u32> {
        self.counts.get(name).copied()
    }
}

/// File-wide facts the emitter needs.
struct Facts {
    /// Threads that may wait on each condition (for broadcasts), in order of first use.
    waiters: Tally,
    /// Names used as user mutexes (a suspend/resume on such a name also takes the mutex).
    user_mutexes: HashSet<String>,
    /// Users of each shared timer.
    timer_users: Tally,
    /// Each barrier's parties.
    barrier_parties: HashMap<String, u32>,
    /// Template index by task name.
    template_of: HashMap<String, usize>,
    /// Templates that some `fork` names.
    fork_targets: HashSet<String>,
}

fn waited_on(e: &Event) -> Option<&str> {
    match e {
        Event::Wait { cond, .. } | Event::Sync { cond, .. } => Some(cond),
        Event::Suspend(n) => Some(n),
        _ => None,
    }
}

fn events(t: &TaskDef) -> impl Iterator<Item = &Event> {
    t.phases.iter().flat_map(|p| p.events.iter().map(|e| &e.event))
}

impl Facts {
    fn new(model: &Model) -> Facts {
        let mut waiters = Tally::default();
        let mut timer_users = Tally::default();
        let mut user_mutexes = HashSet::new();
        let mut fork_targets = HashSet::new();
        let mut template_of = HashMap::new();
        for (ti, t) in model.tasks.iter().enumerate() {
            template_of.entry(t.name.clone()).or_insert(ti);
            let mut seen_c: HashSet<&str> = HashSet::new();
            let mut seen_t: HashSet<&str> = HashSet::new();
            for e in events(t) {
                if let Some(c) = waited_on(e) {
                    if seen_c.insert(c) {
                        waiters.bump(c, t.instances.max(1));
                    }
                }
                if let Event::Timer { name, unique: false, .. } = e {
                    if seen_t.insert(name) {
                        timer_users.bump(name, t.instances);
                    }
                }
                if let Event::Lock(m) | Event::Unlock(m) | Event::Wait { mutex: m, .. } | Event::Sync { mutex: m, .. } =
                    e
                {
                    if !user_mutexes.contains(m) {
                        user_mutexes.insert(m.clone());
                    }
                }
                if let Event::Fork(target) = e {
                    if !fork_targets.contains(target) {
                        fork_targets.insert(target.clone());
                    }
                }
            }
        }
        let barrier_parties = barrier_parties(&model.tasks);
        Facts { waiters, user_mutexes, timer_users, barrier_parties, template_of, fork_targets }
    }

    fn waiters(&self, cond: &str) -> u32 {
        self.waiters.get(cond).unwrap_or(0)
    }

    fn timer_users(&self, name: &str) -> u32 {
        self.timer_users.get(name).map_or(1, |n| n.max(1))
    }

    /// For each condition, in order of first use, the first template started at launch that
    /// waits on it: that template's first instance holds the condition from the start.
    fn first_waiters(&self, model: &Model) -> Vec<(String, usize)> {
        let mut first: HashMap<&str, usize> = HashMap::new();
        for (ti, t) in model.tasks.iter().enumerate().filter(|(_, t)| t.instances > 0) {
            for c in events(t).filter_map(waited_on) {
                first.entry(c).or_insert(ti);
            }
        }
        self.waiters.order.iter().filter_map(|c| first.get(c.as_str()).map(|&ti| (c.clone(), ti))).collect()
    }
}

/// Lower the whole model.
pub fn lower(model: &Model) -> GResult<(Layout, Built)> {
    let facts = Facts::new(model);
    let layout = make_layout(model, &facts)?;
    let mut ids = Ids::default();
    let mut built = Built::default();
    // Conditions held from the start by the first instance of the first task that waits on them.
    let mut prologues: Vec<Vec<Op>> = vec![Vec::new(); model.tasks.len()];
    for (cond, ti) in facts.first_waiters(model) {
        prologues[ti].push(Op::Lock { id: ids.cond(&cond) });
    }
    let mut phase_base = 0;
    // Threads started so far on each shared timer.
    let mut shared_timer_offsets: HashMap<&str, u32> = HashMap::new();
    for (ti, t) in model.tasks.iter().enumerate() {
        let mut em = Emitter { model, facts: &facts, layout: &layout, ids: &mut ids, phase_base, ops: Vec::new() };
        // Up to three variants: forked (for fork targets; others get a placeholder that the
        // table needs), the first instance's (with the prologue) and the other instances'.
        let forked_target = facts.fork_targets.contains(&t.name);
        let forked = if forked_target { em.program(t, &[], true)? } else { vec![Op::Exit] };
        built.programs.push(forked);
        built.fork_table.push(built.programs.len() - 1);
        let (mut first_idx, mut plain_idx) = (0, 0);
        if t.instances > 0 {
            built.programs.push(em.program(t, &prologues[ti], false)?);
            first_idx = built.programs.len() - 1;
            plain_idx = first_idx;
            if t.instances > 1 && !prologues[ti].is_empty() {
                built.programs.push(em.program(t, &[], false)?);
                plain_idx = built.programs.len() - 1;
            }
        }
        phase_base += t.phases.len();
        built.uses_io |= events(t).any(|e| matches!(e, Event::IoRun(_)));
        // A timer shared by k threads fires for each in turn: thread j starts j periods late.
        let shared = events(t).find_map(|e| match e {
            Event::Timer { name, unique: false, period_us, .. } if facts.timer_users(name) > 1 => {
                Some((name, *period_us))
            }
            _ => None,
        });
        for i in 0..t.instances {
            let offset_us = match shared {
                Some((name, period_us)) => {
                    let started = shared_timer_offsets.entry(name.as_str()).or_default();
                    *started += 1;
                    (*started as u64 - 1) * period_us
                }
                None => 0,
            };
            built.instances.push(Instance {
                name: format!("{}-{}", t.name, built.instances.len()),
                program: if i == 0 { first_idx } else { plain_idx },
                start_ns: (t.delay_us + offset_us) * 1000,
                policy: policy_of(t.sched.kind, t.sched.priority),
                nice: nice_of(t.sched.kind, t.sched.priority),
                cpus: initial_cpus(t),
                uclamp: (t.util_min, t.util_max),
            });
        }
    }
    Ok((layout, built))
}

/// The affinity a task starts with: its first phase's, else its own.
fn initial_cpus(t: &TaskDef) -> Option<Vec<usize>> {
    t.phases[0].cpus.clone().or_else(|| t.cpus.clone())
}

fn too_many_slots(path: &str) -> GrammarError {
    GrammarError {
        path: path.to_string(),
        message: format!("more than {} phases and run events in the file", u32::MAX),
    }
}

fn make_layout(model: &Model, facts: &Facts) -> GResult<Layout> {
    let mut layout = Layout::default();
    for t in &model.tasks {
        for p in &t.phases {
            let phase = layout.phases.len();
            let mut slot = |kind: SlotKind, path: &str| -> GResult<u32> {
                layout.slots.push(Slot { phase, kind });
                u32::try_from(layout.slots.len() - 1).map_err(|_| too_many_slots(path))
            };
            let period_slot = slot(SlotKind::Period, &p.path)?;
            let timers =
                p.events.iter().filter(|e| matches!(e.event, Event::Timer { period_us, .. } if period_us > 0)).count();
            if timers > 0 {
                slot(SlotKind::TimerBusy, &p.path)?;
            }
            for e in &p.events {
                match e.event {
                    Event::Run(us) if us > 0 => {
                        slot(SlotKind::Run { ref_ns: run_ref_ns(model.global.calibration, us) }, &e.path)?;
                    }
                    Event::Runtime(us) if us > 0 => {
                        slot(SlotKind::Run { ref_ns: us as f64 * 1000.0 }, &e.path)?;
                    }
                    _ => {}
                }
            }
            let mut info = PhaseInfo {
                task: t.name.clone(),
                phase: p.name.clone(),
                c_duration_us: 0,
                c_period_us: 0,
                c_period_eff_us: 0,
                perf: match model.global.calibration {
                    Calibration::NsPerLoop(_) => Some(0.0),
                    Calibration::Cpu(_) => None,
                },
                timers: timers as u32,
                period_slot,
            };
            for e in &p.events {
                match &e.event {
                    Event::Run(us) | Event::Runtime(us) => info.c_duration_us += us,
                    Event::Timer { name, unique, period_us, .. } => {
                        info.c_period_us += period_us;
                        let users = if *unique { 1 } else { facts.timer_users(name) as u64 };
                        info.c_period_eff_us += period_us * users;
                    }
                    _ => {}
                }
                if let (Event::Run(us), Some(perf), Calibration::NsPerLoop(p)) =
                    (&e.event, info.perf.as_mut(), model.global.calibration)
                {
                    *perf += (us * 1000 / p) as f64 / 1000.0;
                }
            }
            layout.phases.push(info);
        }
    }
    Ok(layout)
}

/// The duration at calibration speed of `run us`: rt-app runs floor(us·1000 / ns_per_loop)
/// loops. "CPUn" calibration is exact.
pub fn run_ref_ns(calibration: Calibration, us: u64) -> f64 {
    match calibration {
        Calibration::Cpu(_) => us as f64 * 1000.0,
        Calibration::NsPerLoop(p) => ((us * 1000 / p) * p) as f64,
    }
}

#[derive(Default)]
struct Ids {
    mutexes: Names,
    channels: Names,
    barriers: Names,
}

impl Ids {
    fn mutex(&mut self, name: &str) -> u32 {
        self.mutexes.id(&format!("mutex:{name}"))
    }
    fn cond(&mut self, name: &str) -> u32 {
        self.mutexes.id(&format!("cond:{name}"))
    }
}

struct Emitter<'a> {
    model: &'a Model,
    facts: &'a Facts,
    layout: &'a Layout,
    ids: &'a mut Ids,
    /// The index in `layout.phases` of this template's first phase.
    phase_base: usize,
    ops: Vec<Op>,
}

impl Emitter<'_> {
    /// The program of template `t`: `prologue`, then its phases. A forked copy first applies
    /// the template's affinity and uclamp (a spawned task starts with default attributes).
    fn program(&mut self, t: &TaskDef, prologue: &[Op], forked: bool) -> GResult<Vec<Op>> {
        // The task starts with its first phase's affinity (a forked copy sets it, as a spawned
        // task starts with default attributes) and its task-level uclamp.
        let mut cpus = initial_cpus(t);
        self.ops = prologue.to_vec();
        if forked {
            if cpus.is_some() {
                self.ops.push(Op::SetAffinity { cpus: cpus.as_ref().map(|c| Rc::from(c.as_slice())) });
            }
            if t.util_min.is_some() || t.util_max.is_some() {
                self.ops.push(Op::SetUclamp { min: t.util_min, max: t.util_max });
            }
        }
        let loop_start = self.ops.len();
        let reps = match t.loops {
            Loop::Forever => 1,
            Loop::Times(n) => n,
        };
        let effective = |p: &PhaseDef| p.cpus.clone().or_else(|| t.cpus.clone());
        let last_cpus = effective(t.phases.last().expect("a task has phases"));
        let mut uclamp = (t.util_min, t.util_max);
        for rep in 0..reps {
            for (pi, phase) in t.phases.iter().enumerate() {
                let want = effective(phase);
                let wrap = rep == 0 && pi == 0 && t.loops == Loop::Forever && want != last_cpus;
                if want != cpus || wrap {
                    self.ops.push(Op::SetAffinity { cpus: want.as_ref().map(|c| Rc::from(c.as_slice())) });
                    cpus = want;
                }
                if phase.util_min.is_some() || phase.util_max.is_some() {
                    uclamp = (phase.util_min.or(uclamp.0), phase.util_max.or(uclamp.1));
                    self.ops.push(Op::SetUclamp { min: uclamp.0, max: uclamp.1 });
                }
                match phase.loops {
                    Loop::Forever => {
                        let start = self.ops.len();
                        self.body(t, pi);
                        self.ops.push(Op::Jump { to: start });
                        return Ok(std::mem::take(&mut self.ops));
                    }
                    Loop::Times(n) => {
                        for _ in 0..n {
                            self.body(t, pi);
                            if self.ops.len() > MAX_PROGRAM_OPS {
                                let path =
                                    if n > 1 { format!("{}.loop", phase.path) } else { format!("{}.loop", t.path) };
                                return Err(GrammarError {
                                    path,
                                    message: format!(
                                        "the loops unroll into more than {MAX_PROGRAM_OPS} operations; \
                                         finite loops are unrolled, so use fewer iterations (or -1: forever)"
                                    ),
                                });
                            }
                        }
                    }
                }
            }
        }
        self.ops.push(match t.loops {
            Loop::Forever => Op::Jump { to: loop_start },
            Loop::Times(_) => Op::Exit,
        });
        Ok(std::mem::take(&mut self.ops))
    }

    /// One iteration of phase `pi` of `t`, between the marks of its period slot.
    fn body(&mut self, t: &TaskDef, pi: usize) {
        let period_slot = self.layout.phases[self.phase_base + pi].period_slot;
        // The phase's slots follow its period slot: the timer one (if any), then one per run.
        let mut next_slot = period_slot + 1;
        let busy_slot = match self.layout.slots.get(next_slot as usize) {
            Some(Slot { kind: SlotKind::TimerBusy, .. }) => {
                next_slot += 1;
                Some(period_slot + 1)
            }
            _ => None,
        };
        self.ops.push(Op::Mark(Mark::Start(period_slot)));
        for e in &t.phases[pi].events {
            self.event(&e.event, busy_slot, &mut next_slot);
        }
        self.ops.push(Op::Mark(Mark::End(period_slot)));
    }

    fn timed(&mut self, slot: u32, op: Op) {
        self.ops.extend([Op::Mark(Mark::Start(slot)), op, Op::Mark(Mark::End(slot))]);
    }

    /// `Unlock H(c)` once per thread that may wait on `c` (at least once).
    fn broadcast(&mut self, cond: &str) {
        let id = self.ids.cond(cond);
        for _ in 0..self.facts.waiters(cond).max(1) {
            self.ops.push(Op::Unlock { id });
        }
    }

    fn cond_wait(&mut self, cond: &str, mutex: &str) {
        let (c, m) = (self.ids.cond(cond), self.ids.mutex(mutex));
        self.ops.extend([Op::Unlock { id: m }, Op::Lock { id: c }, Op::Lock { id: m }]);
    }

    fn event(&mut self, e: &Event, busy_slot: Option<u32>, next_slot: &mut u32) {
        let mut run_slot = || {
            *next_slot += 1;
            *next_slot - 1
        };
        match e {
            Event::Run(0) | Event::Runtime(0) | Event::Sleep(0) | Event::Mem(0) | Event::IoRun(0) => {}
            Event::Run(us) => {
                let slot = run_slot();
                let ns = run_ref_ns(self.model.global.calibration, *us);
                self.timed(slot, Op::Run { cycles: Amount::Fixed(ns), mem_frac: 0.0 });
            }
            Event::Runtime(us) => {
                let slot = run_slot();
                self.timed(slot, Op::RunFor { ns: Amount::Fixed(*us as f64 * 1000.0) });
            }
            Event::Sleep(us) => self.ops.push(Op::Sleep { ns: Amount::Fixed(*us as f64 * 1000.0) }),
            Event::Timer { period_us: 0, .. } => {}
            Event::Timer { name, unique, period_us, absolute } => {
                let users = if *unique { 1 } else { self.facts.timer_users(name) as u64 };
                let slot = busy_slot.expect("a phase with a timer has a timer slot");
                let mode = if *absolute { TimerMode::Absolute } else { TimerMode::Relative };
                self.ops.extend([
                    Op::Mark(Mark::SinceRelease(slot)),
                    Op::Timer { period_ns: period_us * users * 1000, mode },
                    Op::Mark(Mark::TimerWakeUp),
                ]);
            }
            Event::Lock(m) => {
                let id = self.ids.mutex(m);
                self.ops.push(Op::Lock { id });
            }
            Event::Unlock(m) => {
                let id = self.ids.mutex(m);
                self.ops.push(Op::Unlock { id });
            }
            Event::Wait { cond, mutex } => self.cond_wait(cond, mutex),
            Event::Signal(c) => {
                let id = self.ids.cond(c);
                self.ops.push(Op::Unlock { id });
            }
            Event::Broad(c) => self.broadcast(c),
            Event::Sync { cond, mutex } => {
                let id = self.ids.cond(cond);
                self.ops.push(Op::Unlock { id });
                self.cond_wait(cond, mutex);
            }
            Event::Suspend(n) => {
                // rt-app takes the mutex of the same name around the wait.
                if self.facts.user_mutexes.contains(n) {
                    let m = self.ids.mutex(n);
                    self.ops.push(Op::Lock { id: m });
                    self.cond_wait(n, n);
                    self.ops.push(Op::Unlock { id: m });
                } else {
                    let id = self.ids.cond(n);
                    self.ops.push(Op::Lock { id });
                }
            }
            Event::Resume(n) => {
                let m = self.facts.user_mutexes.contains(n).then(|| self.ids.mutex(n));
                if let Some(id) = m {
                    self.ops.push(Op::Lock { id });
                }
                self.broadcast(n);
                if let Some(id) = m {
                    self.ops.push(Op::Unlock { id });
                }
            }
            Event::SemPost(s) => {
                let ch = self.ids.channels.id(s);
                self.ops.push(Op::Post { ch, sync: false });
            }
            Event::SemWait(s) => {
                let ch = self.ids.channels.id(s);
                self.ops.push(Op::Wait { ch });
            }
            Event::Barrier(b) => {
                let id = self.ids.barriers.id(b);
                self.ops.push(Op::Barrier { id, n: self.facts.barrier_parties[b] });
            }
            Event::Fork(target) => {
                let program = self.facts.template_of[target] as u32;
                self.ops.push(Op::Spawn { program, count: 1 });
            }
            Event::Yield => self.ops.push(Op::Yield),
            Event::Mem(bytes) => {
                self.ops.push(Op::RunFor { ns: Amount::Fixed(*bytes as f64 / MEM_WRITE_BYTES_PER_NS) })
            }
            Event::MemRun { kind, size, count } => {
                let ns = match kind {
                    MemRunKind::Read | MemRunKind::Write => *count as f64 * MEMRUN_BYTE_NS,
                    MemRunKind::Chase if *size <= CHASE_CACHE_BYTES => *count as f64 * CHASE_HIT_NS,
                    MemRunKind::Chase => *count as f64 * CHASE_MISS_NS,
                };
                if ns > 0.0 {
                    self.ops.push(Op::RunFor { ns: Amount::Fixed(ns) });
                }
            }
            Event::IoRun(bytes) => {
                self.ops.push(Op::Io {
                    dev: 0,
                    service_ns: Amount::ZERO,
                    transfer_ns: Amount::Fixed(*bytes as f64 / IO_BYTES_PER_NS),
                });
            }
        }
    }
}
