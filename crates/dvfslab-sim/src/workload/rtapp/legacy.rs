//! The v0.x grammar (rt-app before September 2014, still in `doc/examples/merge/`): a thread
//! is `exec` µs of work every `period` µs, with a `lock_order` of resources taken on the way.
//! Resources are declared in a top-level `resources` object with a `type` (mutex by default)
//! and, for signals, a `target` condition. We translate such a thread into the events the
//! current grammar would write for it:
//!
//! ```text
//! for each r in lock_order:
//!     take r's access list, then r       mutex: lock; wait: cond wait using the previous mutex;
//!                                        signal/broadcast/sync: on r's target; sleep: sleep
//!     run r's duration (unless r is a sleep)
//!     unlock the mutexes taken, in reverse order
//! run exec minus the durations above; timer(period), absolute mode
//! ```
//!
//! Differences from rt-app v0.x: `deadline` is accepted and not checked; access lists follow
//! the same depth-first order, each resource once.

use super::grammar::{fail, get, join, object, uint, Event, EventDef, GResult, Loop, PhaseDef};
use super::json::{Node, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Mutex,
    Wait,
    Signal,
    Broadcast,
    Sync,
    Sleep,
    Run,
}

/// A declared resource.
#[derive(Clone, Debug)]
pub struct Resource {
    pub name: String,
    pub kind: Kind,
    pub target: Option<String>,
}

pub fn parse_resources(node: &Node) -> GResult<Vec<Resource>> {
    let mut out = Vec::new();
    for (name, n) in object("resources", node)? {
        let path = join("resources", name);
        let entries = object(&path, n)?;
        let kind = match get(entries, "type").map(|t| (&t.value, t)) {
            None => Kind::Mutex,
            Some((Value::Str(s), t)) => match s.as_str() {
                "mutex" => Kind::Mutex,
                "wait" => Kind::Wait,
                "signal" => Kind::Signal,
                "broadcast" => Kind::Broadcast,
                "sync" => Kind::Sync,
                "sleep" => Kind::Sleep,
                "run" => Kind::Run,
                other => {
                    return fail(
                        &join(&path, "type"),
                        t,
                        format!(
                        "unknown resource type \"{other}\" (known: mutex, wait, signal, broadcast, sync, sleep, run)"
                    ),
                    )
                }
            },
            Some((v, t)) => {
                return fail(&join(&path, "type"), t, format!("expected a resource type, got {}", v.kind()))
            }
        };
        let target = match get(entries, "target") {
            Some(t) => Some(name_of(&join(&path, "target"), t)?),
            None => None,
        };
        out.push(Resource { name: name.clone(), kind, target });
    }
    Ok(out)
}

/// A resource reference: a name, or a number (v0.x indices).
fn name_of(path: &str, node: &Node) -> GResult<String> {
    match &node.value {
        Value::Str(s) if !s.is_empty() => Ok(s.clone()),
        Value::Int(i) => Ok(i.to_string()),
        v => fail(path, node, format!("expected a resource name, got {}", v.kind())),
    }
}

/// A v0.x thread as one phase of events, looping `loop` times (forever by default).
pub fn parse_thread(path: &str, entries: &[(String, Node)], resources: &[Resource]) -> GResult<(Vec<PhaseDef>, Loop)> {
    let exec_node = get(entries, "exec").expect("a v0.x thread has exec");
    let exec_us = uint(&join(path, "exec"), exec_node, "µs")?;
    let period_us = match get(entries, "period") {
        Some(n) => uint(&join(path, "period"), n, "µs")?,
        None => exec_us,
    };
    if period_us == 0 {
        return fail(&join(path, "exec"), exec_node, "a v0.x thread needs exec or period > 0");
    }
    let loops = match get(entries, "loop") {
        Some(n) => super::grammar::parse_loop(&join(path, "loop"), n)?,
        None => Loop::Forever,
    };
    let own = match get(entries, "resources") {
        Some(n) => object(&join(path, "resources"), n)?,
        None => &[],
    };
    let mut events = Vec::new();
    let mut used_us = 0;
    if let Some(order) = get(entries, "lock_order") {
        let opath = join(path, "lock_order");
        let Value::Array(items) = &order.value else {
            return fail(&opath, order, format!("expected an array of resource names, got {}", order.value.kind()));
        };
        for item in items {
            let name = name_of(&opath, item)?;
            let usage_us = match get(own, &name).map(|n| (n, object(&join(path, "resources"), n))) {
                Some((_, Ok(r))) => match get(r, "duration") {
                    Some(d) => uint(&join(&join(&join(path, "resources"), &name), "duration"), d, "µs")?,
                    None => 0,
                },
                Some((_, Err(e))) => return Err(e),
                None => 0,
            };
            let mut acl = Vec::new();
            access_list(&name, own, &mut acl);
            acl.rotate_left(1); // the resource itself goes last, after what it needs
            let epath = format!("{opath}[{name}]");
            let kind_of = |n: &str| resources.iter().find(|r| r.name == n).map_or(Kind::Mutex, |r| r.kind);
            let target_of = |n: &str| {
                resources.iter().find(|r| r.name == n).and_then(|r| r.target.clone()).unwrap_or(n.to_string())
            };
            let mut push = |event: Event| events.push(EventDef { path: epath.clone(), line: item.line, event });
            for (i, res) in acl.iter().enumerate() {
                let prev_mutex = || match i.checked_sub(1).map(|p| &acl[p]) {
                    Some(p) if kind_of(p) == Kind::Mutex => Ok(p.clone()),
                    _ => fail(
                        &opath,
                        item,
                        format!("\"{res}\" waits on a condition and needs a mutex before it in its access list"),
                    ),
                };
                match kind_of(res) {
                    Kind::Mutex => push(Event::Lock(res.clone())),
                    Kind::Wait => push(Event::Wait { cond: res.clone(), mutex: prev_mutex()? }),
                    Kind::Signal => push(Event::Signal(target_of(res))),
                    Kind::Broadcast => push(Event::Broad(target_of(res))),
                    Kind::Sync => push(Event::Sync { cond: target_of(res), mutex: prev_mutex()? }),
                    Kind::Sleep => push(Event::Sleep(usage_us)),
                    Kind::Run => {}
                }
            }
            if kind_of(&name) != Kind::Sleep && usage_us > 0 {
                push(Event::Run(usage_us));
                used_us += usage_us;
            }
            for res in acl.iter().rev().filter(|r| kind_of(r) == Kind::Mutex) {
                push(Event::Unlock(res.clone()));
            }
        }
    }
    let rest_us = exec_us.saturating_sub(used_us);
    if rest_us > 0 {
        events.push(EventDef { path: join(path, "exec"), line: exec_node.line, event: Event::Run(rest_us) });
    }
    events.push(EventDef {
        path: join(path, "period"),
        line: get(entries, "period").unwrap_or(exec_node).line,
        // v0.x's thread loop adds the period to the previous release and sleeps only while that
        // is ahead, never re-anchoring (src/rt-app.c, thread_body, August 2014): absolute mode.
        event: Event::Timer { name: "unique-period".into(), unique: true, period_us, absolute: true },
    });
    let phase = PhaseDef {
        name: path.rsplit('.').next().unwrap_or(path).to_string(),
        path: path.to_string(),
        loops: Loop::Times(1),
        events,
        cpus: None,
        util_min: None,
        util_max: None,
    };
    Ok((vec![phase], loops))
}

/// `name` and, depth first, everything its `access` list names (each once).
fn access_list(name: &str, own: &[(String, Node)], out: &mut Vec<String>) {
    if out.iter().any(|n| n == name) {
        return;
    }
    out.push(name.to_string());
    let Some(Value::Object(r)) = get(own, name).map(|n| &n.value) else { return };
    let Some(Value::Array(access)) = get(r, "access").map(|n| &n.value) else { return };
    for a in access {
        if let Ok(next) = name_of("", a) {
            access_list(&next, own, out);
        }
    }
}
