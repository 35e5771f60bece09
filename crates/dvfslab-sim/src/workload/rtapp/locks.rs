//! Deadlocks a file would run into, found before the run: rt-app itself would hang, and the
//! simulator's mutexes (which hand over on unlock without checking the owner) would either block
//! a thread forever or let an unlock steal another thread's mutex.
//!
//! Each template's events are followed with the set of mutexes its thread holds:
//!
//! ```text
//! lock m            m held already      -> the thread waits for itself
//!                   else                -> an edge h -> m for every held h (lock order)
//! unlock m          m not held          -> refused
//! wait/sync {c, m}  m not held          -> refused (pthread_cond_wait needs it locked);
//!                   m is released and taken back: edges h -> m
//! suspend/resume n  where n is also a mutex: lock n, unlock n (see super::lower)
//! ```
//!
//! A phase that repeats is followed twice, and so is a task's pass over its phases: an event that
//! only errs on a later iteration errs on the second, since each mutex ends an error-free pass in
//! the state its last lock or unlock left.
//!
//! Two threads deadlock when each holds a mutex the other waits for: an edge a -> b from one
//! thread and b -> a from another (lockdep's circular dependency; the kernel's
//! `check_noncircular`). One thread alone taking a then b, and later b then a, cannot deadlock
//! with itself; two threads of the same task can. Longer cycles (a -> b -> c -> a) are found by a
//! depth-first search over the order graph.

use std::collections::{HashMap, HashSet};

use super::grammar::{runs_per_thread, Event, EventDef, GResult, GrammarError, Loop, TaskDef};

/// Where a thread took `to` while holding `from`.
#[derive(Clone, Debug)]
struct Taken {
    task: usize,
    path: String,
    line: u32,
}

/// The lock-order graph: `(from, to)` -> the first place each task takes `to` holding `from`.
#[derive(Default)]
struct Order {
    edges: HashMap<(String, String), Vec<Taken>>,
    /// Successors of each mutex, in order of discovery (for a deterministic search).
    next: HashMap<String, Vec<String>>,
    /// Mutexes in order of first appearance in an edge.
    nodes: Vec<String>,
}

impl Order {
    fn add(&mut self, from: &str, to: &str, at: Taken) {
        let key = (from.to_string(), to.to_string());
        if let Some(list) = self.edges.get_mut(&key) {
            if list.iter().all(|t| t.task != at.task) {
                list.push(at);
            }
            return;
        }
        for name in [from, to] {
            if !self.next.contains_key(name) {
                self.next.insert(name.to_string(), Vec::new());
                self.nodes.push(name.to_string());
            }
        }
        self.next.get_mut(from).expect("inserted").push(to.to_string());
        self.edges.insert(key, vec![at]);
    }
}

/// The mutexes one thread holds, in the order it took them, with where it took each.
#[derive(Default)]
struct Held(Vec<(String, String)>);

impl Held {
    fn position(&self, m: &str) -> Option<usize> {
        self.0.iter().position(|(h, _)| h == m)
    }
}

fn error(e: &EventDef, message: String) -> GrammarError {
    GrammarError { path: e.path.clone(), message: format!("{message} (line {})", e.line) }
}

/// Follows one template's events, recording its lock order.
struct Walker<'a> {
    task: usize,
    /// Names used as mutexes anywhere in the file.
    mutexes: &'a HashSet<&'a str>,
    order: &'a mut Order,
    held: Held,
}

impl Walker<'_> {
    /// Take `m`; `what` says how, naming it ("locks \"m\"").
    fn lock(&mut self, e: &EventDef, m: &str, what: &str) -> GResult<()> {
        if let Some(i) = self.held.position(m) {
            let since = &self.held.0[i].1;
            return Err(error(
                e,
                format!(
                    "{what} while the thread already holds it (since {since}): the thread would wait for \
                     itself forever; unlock it first"
                ),
            ));
        }
        for (h, _) in &self.held.0 {
            let at = Taken { task: self.task, path: e.path.clone(), line: e.line };
            self.order.add(h, m, at);
        }
        self.held.0.push((m.to_string(), e.path.clone()));
        Ok(())
    }

    /// Release `m`; `what` says how, naming it ("unlocks \"m\"").
    fn unlock(&mut self, e: &EventDef, m: &str, what: &str) -> GResult<()> {
        match self.held.position(m) {
            Some(i) => {
                self.held.0.remove(i);
                Ok(())
            }
            None => Err(error(e, format!("{what}, which the thread does not hold: lock it first"))),
        }
    }

    fn event(&mut self, e: &EventDef) -> GResult<()> {
        match &e.event {
            Event::Lock(m) => self.lock(e, m, &format!("locks \"{m}\"")),
            Event::Unlock(m) => self.unlock(e, m, &format!("unlocks \"{m}\"")),
            Event::Wait { cond, mutex } | Event::Sync { cond, mutex } => {
                // pthread_cond_wait: releases the mutex while waiting, then takes it back.
                let what = format!("waits on \"{cond}\" with the mutex \"{mutex}\"");
                self.unlock(e, mutex, &what)?;
                self.lock(e, mutex, &what)
            }
            Event::Suspend(n) | Event::Resume(n) if self.mutexes.contains(n.as_str()) => {
                let verb = if matches!(e.event, Event::Suspend(_)) { "suspends on" } else { "resumes" };
                let what = format!("{verb} \"{n}\", which takes the mutex of that name,");
                self.lock(e, n, &what)?;
                self.unlock(e, n, &what)
            }
            _ => Ok(()),
        }
    }

    /// One pass over the phases; a phase that repeats is followed twice.
    fn pass(&mut self, t: &TaskDef) -> GResult<()> {
        for p in &t.phases {
            let times = if p.loops == Loop::Times(1) { 1 } else { 2 };
            for _ in 0..times {
                for e in &p.events {
                    self.event(e)?;
                }
            }
            if p.loops == Loop::Forever {
                break; // the later phases never run
            }
        }
        Ok(())
    }
}

/// Whether a template may run as two threads or more at once (instances or forks).
fn several_threads(tasks: &[TaskDef]) -> Vec<bool> {
    let mut threads: Vec<u64> = tasks.iter().map(|t| t.instances.into()).collect();
    let forked: HashSet<&str> = tasks
        .iter()
        .flat_map(|t| t.phases.iter().flat_map(|p| &p.events))
        .filter_map(|e| match &e.event {
            Event::Fork(target) => Some(target.as_str()),
            _ => None,
        })
        .collect();
    let index: HashMap<&str, usize> = tasks.iter().enumerate().map(|(i, t)| (t.name.as_str(), i)).collect();
    for t in tasks {
        // A forked forker may run many times over: count it as two threads.
        let forkers = u64::from(t.instances) + if forked.contains(t.name.as_str()) { 2 } else { 0 };
        for (pi, p) in t.phases.iter().enumerate() {
            let runs = runs_per_thread(t, pi).unwrap_or(2);
            for e in &p.events {
                if let Event::Fork(target) = &e.event {
                    let ti = index[target.as_str()];
                    threads[ti] = threads[ti].saturating_add(runs.saturating_mul(forkers));
                }
            }
        }
    }
    threads.into_iter().map(|n| n >= 2).collect()
}

/// Refuse the deadlocks of the module's header.
pub fn check(tasks: &[TaskDef]) -> GResult<()> {
    let mutexes: HashSet<&str> = tasks
        .iter()
        .flat_map(|t| t.phases.iter().flat_map(|p| &p.events))
        .filter_map(|e| match &e.event {
            Event::Lock(m) | Event::Unlock(m) | Event::Wait { mutex: m, .. } | Event::Sync { mutex: m, .. } => {
                Some(m.as_str())
            }
            _ => None,
        })
        .collect();
    if mutexes.is_empty() {
        return Ok(());
    }
    let mut order = Order::default();
    for (ti, t) in tasks.iter().enumerate() {
        let mut walker = Walker { task: ti, mutexes: &mutexes, order: &mut order, held: Held::default() };
        walker.pass(t)?;
        let repeats = t.loops != Loop::Times(1) && t.phases.iter().all(|p| p.loops != Loop::Forever);
        if repeats {
            walker.pass(t)?;
        }
    }
    let several = several_threads(tasks);
    check_pairs(tasks, &order, &several)?;
    check_cycles(tasks, &order, &several)
}

/// Two places that take the same mutexes in opposite orders, from different threads.
fn opposite<'a>(ab: &'a [Taken], ba: &'a [Taken], several: &[bool]) -> Option<(&'a Taken, &'a Taken)> {
    ab.iter().find_map(|x| ba.iter().find(|y| x.task != y.task || several[x.task]).map(|y| (x, y)))
}

fn check_pairs(tasks: &[TaskDef], order: &Order, several: &[bool]) -> GResult<()> {
    for a in &order.nodes {
        for b in &order.next[a] {
            let Some(ba) = order.edges.get(&(b.clone(), a.clone())) else { continue };
            let ab = &order.edges[&(a.clone(), b.clone())];
            if let Some((x, y)) = opposite(ab, ba, several) {
                // Reported at the later of the two places in the file.
                let (first, second, held, wanted) =
                    if (x.task, x.line) <= (y.task, y.line) { (x, y, b, a) } else { (y, x, a, b) };
                let threads = if first.task == second.task {
                    format!("two threads of {}", tasks[first.task].name)
                } else {
                    format!("{} and {}", tasks[first.task].name, tasks[second.task].name)
                };
                return Err(GrammarError {
                    path: second.path.clone(),
                    message: format!(
                        "takes \"{wanted}\" while holding \"{held}\", but {} (line {}) takes \"{held}\" while \
                         holding \"{wanted}\": {threads} can deadlock, each waiting for the mutex the other \
                         holds; take them in the same order (line {})",
                        first.path, first.line, second.line
                    ),
                });
            }
        }
    }
    Ok(())
}

/// A cycle of three mutexes or more, found by a depth-first search from each mutex in turn.
fn check_cycles(tasks: &[TaskDef], order: &Order, several: &[bool]) -> GResult<()> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let index: HashMap<&str, usize> = order.nodes.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
    let mut mark = vec![Mark::New; order.nodes.len()];
    for start in 0..order.nodes.len() {
        if mark[start] != Mark::New {
            continue;
        }
        // (node, next successor to visit); the stack is the current path.
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        mark[start] = Mark::Open;
        while let Some(&mut (node, ref mut k)) = stack.last_mut() {
            let succ = &order.next[&order.nodes[node]];
            if *k == succ.len() {
                mark[node] = Mark::Done;
                stack.pop();
                continue;
            }
            let to = index[succ[*k].as_str()];
            *k += 1;
            match mark[to] {
                Mark::New => {
                    mark[to] = Mark::Open;
                    stack.push((to, 0));
                }
                Mark::Open => {
                    let from = stack.iter().position(|&(n, _)| n == to).expect("open nodes are on the path");
                    let cycle: Vec<usize> = stack[from..].iter().map(|&(n, _)| n).collect();
                    if cycle.len() > 2 {
                        if let Some(e) = cycle_error(tasks, order, several, &cycle) {
                            return Err(e);
                        }
                    }
                }
                Mark::Done => {}
            }
        }
    }
    Ok(())
}

/// The error for a lock-order cycle, unless all of it is one thread's own doing.
fn cycle_error(tasks: &[TaskDef], order: &Order, several: &[bool], cycle: &[usize]) -> Option<GrammarError> {
    let name = |i: usize| order.nodes[i].as_str();
    let steps: Vec<&Taken> = (0..cycle.len())
        .map(|i| {
            let (a, b) = (name(cycle[i]), name(cycle[(i + 1) % cycle.len()]));
            &order.edges[&(a.to_string(), b.to_string())][0]
        })
        .collect();
    let one_thread = steps.iter().all(|s| s.task == steps[0].task && !several[s.task]);
    if one_thread {
        return None;
    }
    let last = steps.iter().max_by_key(|s| (s.task, s.line)).expect("a cycle has steps");
    let ring: Vec<String> = (0..cycle.len())
        .map(|i| {
            let (a, b) = (name(cycle[i]), name(cycle[(i + 1) % cycle.len()]));
            format!(
                "{} takes \"{b}\" holding \"{a}\" ({}, line {})",
                tasks[steps[i].task].name, steps[i].path, steps[i].line
            )
        })
        .collect();
    Some(GrammarError {
        path: last.path.clone(),
        message: format!(
            "the mutexes are taken in a circle, so these threads can deadlock: {}; take them in one order \
             (line {})",
            ring.join(", "),
            last.line
        ),
    })
}
