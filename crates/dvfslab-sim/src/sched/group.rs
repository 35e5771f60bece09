//! Task groups (CONFIG_FAIR_GROUP_SCHED in kernel/sched/fair.c) for one group: the workload's
//! tasks, as a session's are under autogroup (kernel.sched_autogroup_enabled = 1). On each
//! CPU the group has its own run-queue, where its tasks compete by the EEVDF rules of
//! `sched/fair.rs`, and an entity that competes for the CPU at the root run-queue with the
//! tasks outside the group (the machine's kernel threads). The entity's weight is the group's
//! share of its load on that CPU (calc_group_shares), so it changes as the group's tasks come
//! and go on every CPU, and every change re-places the entity (reweight_entity).
//!
//! From 6.14 to 6.18 (commit 6d71a9c61604, January 2025, reverted upstream by 101f3498b4bd in
//! February 2026) reweight_entity re-places an entity by place_entity, the rule for an entity
//! joining the run-queue: it inflates the lag by the run-queue's weight plus the entity's own,
//! though V already counts the entity when it is the running one. With another entity ahead
//! of it at the root, each re-placement moves the running group entity further behind (at
//! equal weights by a quarter of the gap, [`reweighted_vruntime`]), so that entity never
//! becomes eligible again: it starves while the group keeps the CPU. The re-placement also
//! overwrites the running entity's slice protection (vprot, before 6.17 the deadline stashed
//! in vlag, share their storage with vlag), so that every accounting at the root then asks for
//! a reschedule. docs/recording.md measures both on a 6.18 kernel.
//!
//! Left out: the group's blocked load in its load average (only its runnable tasks' load
//! counts here), the rate limit of the group's load-average updates, hierarchical load in
//! load balancing and wake-affine (the group's tasks weigh what a task weighs), and more than
//! one group.

use crate::engine::EventQueue;
use crate::kernel::KernelVersion;
use crate::sched::eevdf::{self, Entity, Load, Running};
use crate::sched::Sched;

/// The group entity's id in a root run-queue's [`eevdf::Queue`] (task ids are indices).
pub(crate) const GROUP: usize = usize::MAX;

/// A nice-0 weight (NICE_0_LOAD after scale_load_down): every task's, and a group's shares.
const NICE_0: u64 = 1024;

/// The least weight a group entity gets (MIN_SHARES).
const MIN_SHARES: u64 = 2;

/// The kernels whose task groups are modelled: those whose reweight_entity re-places a queued
/// entity by place_entity (6.14 to 6.18 and its stable updates). Others are refused.
pub(crate) fn modelled(kernel: KernelVersion) -> bool {
    (KernelVersion(6, 14, 0)..KernelVersion(6, 19, 0)).contains(&kernel)
}

/// The group's entity on one CPU.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct GroupEntity {
    /// It slept while not eligible and stays queued until picked or its group wakes here.
    pub delayed: bool,
    /// The root's running entity (cfs_rq->curr): a task of the group was switched in last
    /// here, and nothing else since (it stays so until another entity is set, as the kernel's
    /// curr does after its last task blocks).
    pub curr: bool,
    pub vruntime: u64,
    pub deadline: u64,
    /// The vruntime up to which its pick at the root protects it (see `Rules::protected`).
    pub vprot: u64,
    pub vlag: i64,
    pub rel_deadline: Option<u64>,
    /// Its weight: the group's shares on this CPU.
    pub weight: u64,
    /// When its runtime was last accounted (its own exec_start).
    pub exec_start: u64,
    /// The group's tasks queued here: waiting, running and delayed (the group's nr_queued).
    pub tasks: usize,
    /// This CPU's load in the group's total (tg_load_avg_contrib).
    pub contrib: u64,
    /// The root's next buddy: a task of the group slept while others stay (PICK_BUDDY).
    pub next_buddy: bool,
    /// Its place among equal deadlines at the root while it waits there (`eevdf::Queue`).
    pub joined: u64,
}

impl GroupEntity {
    /// Queued at the root: the group's run-queue here has tasks (waiting, running or delayed),
    /// or the entity is delayed.
    pub(crate) fn on_rq(&self) -> bool {
        self.tasks > 0 || self.delayed
    }
}

impl Default for GroupEntity {
    fn default() -> Self {
        GroupEntity {
            delayed: false,
            curr: false,
            vruntime: eevdf::VRUNTIME_ORIGIN,
            deadline: eevdf::VRUNTIME_ORIGIN,
            vprot: 0,
            vlag: 0,
            rel_deadline: None,
            weight: NICE_0,
            exec_start: 0,
            tasks: 0,
            contrib: 0,
            next_buddy: false,
            joined: 0,
        }
    }
}

/// Virtual time for `ns` of real time, or of slice, at `weight` (calc_delta_fair).
fn virtual_ns(ns: u64, weight: u64) -> u64 {
    (ns as u128 * NICE_0 as u128 / weight.max(1) as u128) as u64
}

/// calc_group_shares: the group's weight on a CPU whose load is `load`, of a group whose
/// CPUs' loads add up to `total` (this one's included): its shares (a nice-0 weight) in
/// proportion, between MIN_SHARES and all of them.
pub(crate) fn shares(load: u64, total: u64) -> u64 {
    if total == 0 {
        return NICE_0;
    }
    (NICE_0 * load / total).clamp(MIN_SHARES, NICE_0)
}

/// The vruntime reweight_entity gives a queued entity re-placed at a new weight `w_new`, on the
/// kernels of [`modelled`]: its lag against `avg` (V before the change; clamped by the caller)
/// scaled by `w_old / w_new`, then placed as a joining entity (place_entity): V is taken with
/// the entity at its new weight where it is the running one (`running`; a waiting entity left
/// the sums first), and the lag is inflated by (W + w_new) / W, W being the sums' weight
/// (`others_w` plus, for the running entity, its own again).
pub(crate) fn reweighted_vruntime(v: u64, lag: i64, w_old: u64, w_new: u64, others: &Load, running: bool) -> u64 {
    let vlag = lag as i128 * w_old as i128 / w_new as i128;
    let sums = if running { others.with(v, w_new) } else { *others };
    let Some(avg) = sums.avg_vruntime() else { return v };
    if others.weight() == 0 || vlag == 0 {
        return avg;
    }
    let load = sums.weight() as i128;
    let inflated = vlag * (load + w_new as i128) / load;
    (avg as i128 - inflated).max(0) as u64
}

impl Sched {
    /// Whether `task` is in the group (task groups on, and one of the workload's tasks).
    pub(crate) fn grouped(&self, task: usize) -> bool {
        self.groups && self.tasks[task].attrs.grouped
    }

    /// The root run-queue's load: its waiting (and delayed) entities, the group's among them
    /// when it waits, and its running one: the group's entity while it is the root's current
    /// one and queued, else the running task outside the group.
    pub(crate) fn root_load(&self, cpu: usize) -> Load {
        let c = &self.cpus[cpu];
        let g = &c.group;
        if g.curr && g.on_rq() {
            return c.root.load.with(g.vruntime, g.weight);
        }
        match self.fair_curr(cpu).filter(|&t| !self.grouped(t)) {
            Some(t) => c.root.load.with(self.tasks[t].vruntime, self.tasks[t].weight),
            None => c.root.load,
        }
    }

    /// update_curr at the root for the group's running entity: it is charged the time since
    /// its last accounting at its weight, its deadline renewed when reached, and with other
    /// entities queued at the root a reschedule is asked when it was renewed or the entity is
    /// past its protection.
    pub(crate) fn root_update_curr(&mut self, q: &EventQueue, cpu: usize) {
        let rules = self.rules();
        let now = q.now();
        let c = &mut self.cpus[cpu];
        let g = &mut c.group;
        if !(g.curr && g.on_rq()) {
            return;
        }
        let delta = now.saturating_sub(g.exec_start);
        g.exec_start = now;
        if delta == 0 {
            return;
        }
        g.vruntime += virtual_ns(delta, g.weight);
        let renewed = g.vruntime >= g.deadline;
        if renewed {
            g.deadline = g.vruntime + virtual_ns(rules.slice_ns, g.weight);
        }
        if c.root.is_empty() {
            return;
        }
        if renewed || !rules.protected(g.vruntime, g.deadline, g.vprot) {
            c.resched = true;
            g.next_buddy = false;
        }
    }

    /// The group's entity joins `cpu`'s root as a task of the group is enqueued there
    /// (enqueue_entity, then update_cfs_group): placed with its lag if it was not queued,
    /// requeued if it was delayed, else re-weighted for its new load.
    pub(crate) fn group_task_joined(&mut self, q: &EventQueue, cpu: usize) {
        let g = &mut self.cpus[cpu].group;
        if g.tasks > 0 {
            g.tasks += 1;
            return self.group_reweight(q, cpu);
        }
        let rules = self.rules();
        if self.cpus[cpu].group.delayed {
            self.cpus[cpu].group.tasks = 1;
            // requeue_delayed_entity: its lag read with it counted; a positive one dropped
            // (DELAY_ZERO), the entity placed at V (of the others, unless it is the root's
            // running entity, which V always counts).
            self.root_update_curr(q, cpu);
            let lag = self.group_lag(cpu, &self.root_load(cpu));
            self.cpus[cpu].group.delayed = false;
            if lag > 0 {
                let load =
                    if self.cpus[cpu].group.curr { self.root_load(cpu) } else { self.root_load_without_group(cpu) };
                self.group_leave_tree(cpu);
                let g = &mut self.cpus[cpu].group;
                g.vruntime = load.avg_vruntime().unwrap_or(g.vruntime);
                g.deadline = g.vruntime + virtual_ns(rules.slice_ns, g.weight);
                self.group_enter_tree(cpu);
            }
            return self.group_reweight(q, cpu);
        }
        self.root_update_curr(q, cpu);
        let load = self.root_load(cpu);
        // update_cfs_group before the placement: the weight it is placed with.
        self.cpus[cpu].group.tasks = 1;
        let w = self.group_shares(cpu);
        let g = &mut self.cpus[cpu].group;
        g.vlag = (g.vlag as i128 * g.weight as i128 / w as i128) as i64;
        if let Some(rel) = g.rel_deadline.as_mut() {
            *rel = (*rel as u128 * g.weight as u128 / w as u128) as u64;
        }
        g.weight = w;
        let avg = load.avg_vruntime().unwrap_or(self.cpus[cpu].min_vruntime);
        let g = &mut self.cpus[cpu].group;
        g.vruntime = eevdf::placed_vruntime(avg, g.vlag, load.weight(), g.weight);
        g.deadline = match g.rel_deadline.take() {
            Some(rel) => g.vruntime + rel,
            None => g.vruntime + virtual_ns(rules.slice_ns, g.weight),
        };
        self.group_enter_tree(cpu);
    }

    /// A task of the group left `cpu` for good or for a sleep (`sleep`: it may stay delayed;
    /// a move to another CPU may not): with others left the group's entity is re-weighted and,
    /// after a sleep, made the root's next buddy; with none it leaves the root with its lag, or
    /// from 6.12 stays delayed after a sleep while it is not eligible.
    pub(crate) fn group_task_left(&mut self, q: &EventQueue, cpu: usize, sleep: bool) {
        let g = &mut self.cpus[cpu].group;
        debug_assert!(g.tasks > 0, "a task left a group that had none here");
        if g.tasks > 1 {
            g.tasks -= 1;
            self.group_reweight(q, cpu);
            if sleep {
                self.cpus[cpu].group.next_buddy = true;
            }
            return;
        }
        let rules = self.rules();
        self.root_update_curr(q, cpu);
        // No load of the group here any more (its blocked load is left out).
        self.cpus[cpu].group.contrib = 0;
        self.cpus[cpu].group.next_buddy = false;
        let load = self.root_load(cpu);
        if sleep && rules.delay_dequeue && !load.eligible(self.cpus[cpu].group.vruntime) {
            let g = &mut self.cpus[cpu].group;
            g.delayed = true;
            g.tasks = 0;
            return;
        }
        let lag = self.group_lag(cpu, &load);
        self.group_leave_tree(cpu);
        let g = &mut self.cpus[cpu].group;
        g.tasks = 0;
        g.vlag = lag;
        if !sleep && rules.rel_deadline {
            g.rel_deadline = Some(g.deadline.saturating_sub(g.vruntime));
        }
    }

    /// The group's delayed entity leaves `cpu`'s root as the pick chose it (dequeue_entity with
    /// DEQUEUE_DELAYED): with its lag, a positive one dropped.
    pub(crate) fn group_finish_delayed(&mut self, q: &EventQueue, cpu: usize) {
        self.root_update_curr(q, cpu);
        let lag = self.group_lag(cpu, &self.root_load(cpu));
        self.group_leave_tree(cpu);
        let g = &mut self.cpus[cpu].group;
        g.delayed = false;
        g.vlag = lag.min(0);
    }

    /// update_cfs_group for `cpu`'s group entity: its shares for the group's load now, and
    /// where they changed, reweight_entity: the queued entity is re-placed at its new weight
    /// ([`reweighted_vruntime`]), its deadline kept relative to its vruntime and scaled, and the
    /// running one loses its slice protection (its vprot, or before 6.17 the deadline stashed in
    /// vlag, overwritten by the lag).
    pub(crate) fn group_reweight(&mut self, q: &EventQueue, cpu: usize) {
        if self.cpus[cpu].group.tasks == 0 {
            return;
        }
        let w = self.group_shares(cpu);
        let w_old = self.cpus[cpu].group.weight;
        if w == w_old {
            return;
        }
        let rules = self.rules();
        self.root_update_curr(q, cpu);
        let running = self.cpus[cpu].group.curr;
        let lag = self.group_lag(cpu, &self.root_load(cpu));
        let others = self.root_load_without_group(cpu);
        self.group_leave_tree(cpu);
        let g = &mut self.cpus[cpu].group;
        let rel = (g.deadline.saturating_sub(g.vruntime) as u128 * w_old as u128 / w as u128) as u64;
        g.vruntime = reweighted_vruntime(g.vruntime, lag, w_old, w, &others, running);
        g.deadline = g.vruntime + rel;
        g.weight = w;
        if running {
            g.vprot = if rules.protect_by_vruntime { 0 } else { g.deadline.wrapping_add(1) };
        }
        self.group_enter_tree(cpu);
    }

    /// The group's shares on `cpu` (calc_group_shares): its load there, the larger of its
    /// queued tasks' weight and their load averages, against the group's load on every CPU.
    fn group_shares(&mut self, cpu: usize) -> u64 {
        let load = self.group_load_on(cpu);
        self.cpus[cpu].group.contrib = load;
        let total: u64 = self.cpus.iter().map(|c| c.group.contrib).sum();
        shares(load, total)
    }

    /// The group's load on `cpu`: max(its queued tasks' weight, the load averages of those
    /// in its run-queue and running).
    fn group_load_on(&self, cpu: usize) -> u64 {
        let running = self.fair_curr(cpu).filter(|&t| self.grouped(t));
        let tasks = self.cpus[cpu].fair.by_deadline.iter().map(|&(_, _, t)| t).chain(running);
        let avg: u64 = tasks.map(|t| self.tasks[t].avg.load_avg).sum();
        (NICE_0 * self.cpus[cpu].group.tasks as u64).max(avg)
    }

    /// The root's sums without the group's entity.
    fn root_load_without_group(&self, cpu: usize) -> Load {
        let g = &self.cpus[cpu].group;
        let mut load = self.root_load(cpu);
        if g.on_rq() {
            load.sub(g.vruntime, g.weight);
        }
        load
    }

    /// The group entity's lag against `load` (the sums with it counted), clamped to the lag
    /// limit in its own virtual time (update_entity_lag's calc_delta_fair).
    fn group_lag(&self, cpu: usize, load: &Load) -> i64 {
        let g = &self.cpus[cpu].group;
        let avg = load.avg_vruntime().unwrap_or(g.vruntime);
        eevdf::clamped_lag(avg, g.vruntime, virtual_ns(self.rules().lag_limit_ns, g.weight))
    }

    /// Take the group's entity out of the root's tree, where it waits (not while it runs).
    fn group_leave_tree(&mut self, cpu: usize) {
        let c = &mut self.cpus[cpu];
        let g = &c.group;
        if c.root.by_deadline.contains(&(g.deadline, g.joined, GROUP)) {
            c.root.remove(GROUP, g.joined, g.vruntime, g.deadline, g.weight);
        }
    }

    /// Put the group's queued entity in the root's tree unless it runs.
    fn group_enter_tree(&mut self, cpu: usize) {
        let c = &mut self.cpus[cpu];
        let g = &c.group;
        if g.on_rq() && !g.curr {
            c.group.joined = c.root.insert(GROUP, g.vruntime, g.deadline, g.weight);
        }
    }

    /// set_next_entity at the root as `task` is switched in: a task of the group makes the
    /// group's entity the running one, re-armed for its slice only when the root picks it anew
    /// (another entity ran before it, or none); a task outside the group puts the group's
    /// entity back among the waiting ones (put_prev_entity, its runtime accounted first).
    pub(crate) fn root_set_next(&mut self, q: &EventQueue, cpu: usize, task: Option<usize>) {
        let grouped = task.is_some_and(|t| self.grouped(t));
        let g = &self.cpus[cpu].group;
        if grouped == g.curr {
            return;
        }
        if grouped {
            self.group_leave_tree(cpu);
            let g = &mut self.cpus[cpu].group;
            g.curr = true;
            g.next_buddy = false;
            g.exec_start = q.now();
            g.vprot = g.deadline;
        } else {
            self.root_update_curr(q, cpu);
            self.cpus[cpu].group.curr = false;
            self.group_enter_tree(cpu);
        }
    }

    /// The root's pick (pick_eevdf at the root; a scheduling pick, `buddy`, takes the next
    /// buddy first when it is eligible: pick_next_entity's PICK_BUDDY): the group's entity (as
    /// [`GROUP`]) or a task outside the group. `with_curr`: the running task competes;
    /// otherwise only a group entity still current after its task left does.
    pub(crate) fn root_peek(&self, cpu: usize, with_curr: bool, protect: bool, buddy: bool) -> Option<usize> {
        let rules = self.rules();
        let c = &self.cpus[cpu];
        let g = &c.group;
        let load = self.root_load(cpu);
        if buddy && g.next_buddy && g.on_rq() && load.eligible(g.vruntime) {
            return Some(GROUP);
        }
        let running = if g.curr && g.on_rq() {
            let entity = Entity { task: GROUP, vruntime: g.vruntime, deadline: g.deadline };
            Some(Running { entity, protected: rules.protected(g.vruntime, g.deadline, g.vprot) })
        } else if with_curr {
            self.fair_curr(cpu).filter(|&t| !self.grouped(t)).map(|t| {
                let s = &self.tasks[t];
                let entity = Entity { task: t, vruntime: s.vruntime, deadline: s.deadline };
                Running { entity, protected: rules.protected(s.vruntime, s.deadline, s.vprot) }
            })
        } else {
            None
        };
        let queued = c.root.by_deadline.iter().map(|&(deadline, _, id)| {
            let vruntime = if id == GROUP { g.vruntime } else { self.tasks[id].vruntime };
            Entity { task: id, vruntime, deadline }
        });
        eevdf::pick(&load, queued, running, protect, rules.curr_wins_ties)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(entities: &[(u64, u64)]) -> Load {
        entities.iter().fold(Load::default(), |l, &(v, w)| l.with(v, w))
    }

    #[test]
    fn shares_follow_the_groups_load_on_the_cpu() {
        // All of the group's load here: all its shares; half: half; a sliver: MIN_SHARES.
        assert_eq!(shares(2048, 2048), 1024);
        assert_eq!(shares(1024, 2048), 512);
        assert_eq!(shares(1, 100_000), MIN_SHARES);
        assert_eq!(shares(0, 0), 1024);
    }

    #[test]
    fn re_placing_the_running_group_entity_moves_it_further_behind_the_one_ahead() {
        // The group's entity runs at 0, another entity waits at 100, both of weight 1024:
        // V = 50, the running one's lag 50. Re-placed at an unchanged weight (the limit case
        // of a small change), V is taken with it (50) and its lag inflated by (2048 + 1024) /
        // 2048: it lands at 50 − 75 = −25 relative, 125 behind the other instead of 100.
        let base = 1_000_000;
        let others = load(&[(base + 100, 1024)]);
        let v = reweighted_vruntime(base, 50, 1024, 1024, &others, true);
        assert_eq!(base + 100 - v, 125);
        // Again and again: the gap grows by a quarter each time, so the other entity, ahead,
        // never becomes eligible while the running one keeps being re-placed.
        let mut v = base;
        let mut gaps = Vec::new();
        for _ in 0..4 {
            let l = load(&[(v, 1024), (base + 100, 1024)]);
            let lag = l.avg_vruntime().unwrap() as i64 - v as i64;
            v = reweighted_vruntime(v, lag, 1024, 1024, &others, true);
            assert!(!load(&[(v, 1024), (base + 100, 1024)]).eligible(base + 100));
            gaps.push(base + 100 - v);
        }
        // 100 · 1.25^k, each V and lag rounded down as the kernel's divisions do.
        assert_eq!(gaps, [125, 156, 195, 243]);
        // A waiting entity re-placed leaves the sums first, as place_entity expects: its lag
        // comes out as it was (V of the others 100, lag 50 → placed 100 behind V, so that V
        // with it is 50 and its lag 50 again).
        let v = reweighted_vruntime(base, 50, 1024, 1024, &others, false);
        let after = load(&[(v, 1024), (base + 100, 1024)]);
        assert_eq!(after.avg_vruntime().unwrap() as i64 - v as i64, 50);
    }

    #[test]
    fn a_new_weight_scales_the_lag_before_placement() {
        // Halving the weight doubles the virtual lag: 50 at 1024 is 100 at 512.
        let base = 1_000_000;
        let others = load(&[(base + 200, 1024)]);
        let v = reweighted_vruntime(base, 50, 1024, 512, &others, false);
        let after = load(&[(v, 512), (base + 200, 1024)]);
        assert_eq!(after.avg_vruntime().unwrap() as i64 - v as i64, 100);
        // Alone at the root there is no lag to keep: the entity is placed at its own vruntime.
        assert_eq!(reweighted_vruntime(base, 0, 1024, 512, &Load::default(), true), base);
    }

    #[test]
    fn task_groups_are_modelled_from_6_14_to_6_18() {
        assert!(!modelled(KernelVersion(6, 13, 0)));
        assert!(modelled(KernelVersion(6, 14, 0)) && modelled(KernelVersion(6, 18, 0)));
        assert!(!modelled(KernelVersion(6, 19, 0)));
    }
}
