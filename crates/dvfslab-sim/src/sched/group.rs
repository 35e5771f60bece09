//! Task groups (CONFIG_FAIR_GROUP_SCHED in kernel/sched/fair.c) one level deep, as autogroup
//! makes them (kernel.sched_autogroup_enabled = 1): one group per session, the workload's
//! tasks in their session's (a task that starts a session, `Op::Setsid`, moves to a group of
//! its own: sched_autogroup_create_attach), the machine's kernel threads at the root. On each
//! CPU a group has its own run-queue, where its tasks compete by the EEVDF rules of
//! `sched/fair.rs`, and an entity that competes for the CPU at the root run-queue with the
//! other groups' entities and the tasks outside the groups. The entity's weight is the group's
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
//! The group's load on a CPU is its run-queue's load average, blocked load included: a task
//! that sleeps leaves its load there, decaying, until it exits or wakes on another CPU. The
//! shares read this CPU's load now and the other CPUs' as each last told the group's total
//! (update_tg_load_avg: at most once a millisecond, from 6.7, and only a change of more than
//! 1/64), so a task that sleeps or wakes on one CPU moves the others' weights only later and
//! smoothly. The run-queue's average is taken as the sum of its tasks' averages (PELT is
//! linear; the kernel keeps the run-queue's own, equal but for rounding), and a CPU where the
//! group has nothing queued tells its decaying load whenever another CPU reads the total
//! (within the rate limit), where the kernel's balancer updates such blocked averages at its
//! own, less regular times (update_blocked_averages).
//!
//! Left out: hierarchical load in load balancing and wake-affine (the group's tasks weigh
//! what a task weighs), and groups within groups.

use crate::engine::EventQueue;
use crate::kernel::KernelVersion;
use crate::sched::eevdf::{self, calc_delta_fair, Entity, Load, Running, NICE_0};
use crate::sched::task::TaskState;
use crate::sched::Sched;

/// Group entities' ids in a root run-queue's [`eevdf::Queue`] count down from the top of the
/// ids, task ids (indices) up from 0: ids from this one up are groups'.
const FIRST_GROUP_ID: usize = usize::MAX / 2;

/// Group `g`'s entity's id in a root run-queue's [`eevdf::Queue`].
pub(crate) fn entity_id(g: usize) -> usize {
    usize::MAX - g
}

/// The group whose entity `id` is, if it is a group's.
pub(crate) fn group_of_entity(id: usize) -> Option<usize> {
    (id >= FIRST_GROUP_ID).then(|| usize::MAX - id)
}

/// update_tg_load_avg's rate limit (6.7+, "sched/fair: Ratelimit update to tg->load_avg"):
/// a CPU tells the group's total its load at most once in this long.
const TG_LOAD_UPDATE_NS: u64 = 1_000_000;

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
    /// Their weights' sum (the group's run-queue's load.weight).
    pub tasks_weight: u64,
    /// Its place among equal deadlines at the root while it waits there (`eevdf::Queue`).
    pub joined: u64,
}

/// A task group's share of one CPU: its entity at the root and its own run-queue there (the
/// group's cfs_rq on that CPU).
#[derive(Clone, Debug, Default)]
pub(crate) struct GroupRq {
    pub entity: GroupEntity,
    /// The group's tasks waiting here, and those whose dequeue is delayed.
    pub queue: eevdf::Queue,
    /// This CPU's load average as the group's total last took it (tg_load_avg_contrib) ...
    pub contrib: u64,
    /// ... and when (last_update_tg_load_avg); None before the first time.
    pub contrib_at: Option<u64>,
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
            vruntime: eevdf::VRUNTIME_ORIGIN,
            deadline: eevdf::VRUNTIME_ORIGIN,
            vprot: 0,
            vlag: 0,
            rel_deadline: None,
            weight: NICE_0,
            exec_start: 0,
            tasks: 0,
            tasks_weight: 0,
            joined: 0,
        }
    }
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
    /// The task group `task` is in: None for a task at the root, and for every task when task
    /// groups are off.
    pub(crate) fn group_of(&self, task: usize) -> Option<usize> {
        if self.groups {
            self.tasks[task].attrs.group
        } else {
            None
        }
    }

    /// Whether `task` is in a task group.
    pub(crate) fn grouped(&self, task: usize) -> bool {
        self.group_of(task).is_some()
    }

    /// A new task group (sched_create_group, as autogroup makes one for a new session): an
    /// entity and an empty run-queue on every CPU. Its index.
    pub(crate) fn new_group(&mut self) -> usize {
        for c in &mut self.cpus {
            c.groups.push(GroupRq::default());
        }
        self.group_members.push(Vec::new());
        self.cpus.first().map_or(0, |c| c.groups.len() - 1)
    }

    /// clear_buddies at `cpu`'s root for group `g`'s entity: the next buddy no more if it is.
    fn clear_root_buddy(&mut self, cpu: usize, g: usize) {
        let c = &mut self.cpus[cpu];
        if c.root_next_buddy == Some(g) {
            c.root_next_buddy = None;
        }
    }

    /// The root run-queue's load: its waiting (and delayed) entities, the groups' among them,
    /// and its running one: a group's entity while it is the root's current one and queued,
    /// else the running task outside every group.
    pub(crate) fn root_load(&self, cpu: usize) -> Load {
        let c = &self.cpus[cpu];
        if let Some(e) = c.root_curr_group.map(|g| &c.groups[g].entity).filter(|e| e.on_rq()) {
            return c.root.load.with(e.vruntime, e.weight);
        }
        match self.fair_curr(cpu).filter(|&t| !self.grouped(t)) {
            Some(t) => c.root.load.with(self.tasks[t].vruntime, self.tasks[t].weight()),
            None => c.root.load,
        }
    }

    /// update_curr at the root for a group's running entity: it is charged the time since its
    /// last accounting at its weight, its deadline renewed when reached, and with other
    /// entities queued at the root a reschedule is asked when it was renewed or the entity is
    /// past its protection.
    pub(crate) fn root_update_curr(&mut self, q: &EventQueue, cpu: usize) {
        let Some(g) = self.cpus[cpu].root_curr_group else { return };
        let rules = self.rules();
        let now = q.now();
        let c = &mut self.cpus[cpu];
        let e = &mut c.groups[g].entity;
        if !e.on_rq() {
            return;
        }
        let delta = now.saturating_sub(e.exec_start);
        e.exec_start = now;
        if delta == 0 {
            return;
        }
        e.vruntime += calc_delta_fair(delta, e.weight);
        let renewed = e.vruntime >= e.deadline;
        if renewed {
            e.deadline = rules.deadline(e.vruntime, e.weight, false);
        }
        if c.root.is_empty() {
            return;
        }
        if renewed || !rules.protected(e.vruntime, e.deadline, e.vprot) {
            c.resched = true;
            self.clear_root_buddy(cpu, g);
        }
    }

    /// Group `g`'s entity joins `cpu`'s root as a task of the group is enqueued there
    /// (enqueue_entity, then update_cfs_group): placed with its lag if it was not queued,
    /// requeued if it was delayed, else re-weighted for its new load.
    pub(crate) fn group_task_joined(&mut self, q: &EventQueue, cpu: usize, g: usize, task: usize) {
        let task_weight = self.tasks[task].weight();
        if !self.group_members[g].contains(&task) {
            self.group_members[g].push(task);
        }
        self.update_tg_load(q, cpu, g);
        let e = &mut self.cpus[cpu].groups[g].entity;
        if e.tasks > 0 {
            e.tasks += 1;
            e.tasks_weight += task_weight;
            return self.group_reweight(q, cpu, g);
        }
        let rules = self.rules();
        if self.cpus[cpu].groups[g].entity.delayed {
            let e = &mut self.cpus[cpu].groups[g].entity;
            (e.tasks, e.tasks_weight) = (1, task_weight);
            // requeue_delayed_entity: its lag read with it counted, the root's running entity
            // as last accounted (enqueue_task_fair accounts only the group's own run-queue
            // before it: a delayed entity that waited while another ran finds itself owed
            // less than it is, and keeps its place); a positive one dropped (DELAY_ZERO), the
            // entity placed at V (of the others, unless it is the root's running entity,
            // which V always counts).
            let lag = self.group_lag(cpu, g, &self.root_load(cpu));
            self.cpus[cpu].groups[g].entity.delayed = false;
            if lag > 0 {
                let load = if self.cpus[cpu].root_curr_group == Some(g) {
                    self.root_load(cpu)
                } else {
                    self.root_load_without_group(cpu, g)
                };
                self.group_leave_tree(cpu, g);
                let e = &mut self.cpus[cpu].groups[g].entity;
                e.vruntime = load.avg_vruntime().unwrap_or(e.vruntime);
                e.deadline = rules.deadline(e.vruntime, e.weight, false);
                self.group_enter_tree(cpu, g);
            }
            return self.group_reweight(q, cpu, g);
        }
        self.root_update_curr(q, cpu);
        let load = self.root_load(cpu);
        // update_cfs_group before the placement: the weight it is placed with.
        let e = &mut self.cpus[cpu].groups[g].entity;
        (e.tasks, e.tasks_weight) = (1, task_weight);
        let w = self.group_shares(q, cpu, g);
        let min_vruntime = self.cpus[cpu].min_vruntime;
        let e = &mut self.cpus[cpu].groups[g].entity;
        e.vlag = (e.vlag as i128 * e.weight as i128 / w as i128) as i64;
        if let Some(rel) = e.rel_deadline.as_mut() {
            *rel = (*rel as u128 * e.weight as u128 / w as u128) as u64;
        }
        e.weight = w;
        let avg = load.avg_vruntime().unwrap_or(min_vruntime);
        e.vruntime = eevdf::placed_vruntime(avg, e.vlag, load.weight(), e.weight);
        e.deadline = match e.rel_deadline.take() {
            Some(rel) => e.vruntime + rel,
            None => rules.deadline(e.vruntime, e.weight, false),
        };
        self.group_enter_tree(cpu, g);
    }

    /// A task of group `g` left `cpu` for good or for a sleep (`sleep`: it may stay delayed;
    /// a move to another CPU or group may not): with others left the group's entity is
    /// re-weighted and, after a sleep, made the root's next buddy; with none it leaves the root
    /// with its lag, or from 6.12 stays delayed after a sleep while it is not eligible.
    pub(crate) fn group_task_left(&mut self, q: &EventQueue, cpu: usize, g: usize, task_weight: u64, sleep: bool) {
        self.update_tg_load(q, cpu, g);
        let e = &mut self.cpus[cpu].groups[g].entity;
        debug_assert!(e.tasks > 0, "a task left a group that had none here");
        if e.tasks > 1 {
            e.tasks -= 1;
            e.tasks_weight -= task_weight;
            self.group_reweight(q, cpu, g);
            if sleep {
                self.cpus[cpu].root_next_buddy = Some(g);
            }
            return;
        }
        let rules = self.rules();
        self.root_update_curr(q, cpu);
        self.clear_root_buddy(cpu, g);
        let load = self.root_load(cpu);
        if sleep && rules.delay_dequeue && !load.eligible(self.cpus[cpu].groups[g].entity.vruntime) {
            let e = &mut self.cpus[cpu].groups[g].entity;
            e.delayed = true;
            (e.tasks, e.tasks_weight) = (0, 0);
            return;
        }
        let lag = self.group_lag(cpu, g, &load);
        self.group_leave_tree(cpu, g);
        let e = &mut self.cpus[cpu].groups[g].entity;
        (e.tasks, e.tasks_weight) = (0, 0);
        e.vlag = lag;
        if !sleep && rules.rel_deadline {
            e.rel_deadline = Some(e.deadline.saturating_sub(e.vruntime));
        }
    }

    /// sched_move_task for `task`, running on `cpu`, as setsid() moves it to a new group
    /// (sched_autogroup_create_attach): it leaves its group's run-queue as a moving task does
    /// (dequeue_task with DEQUEUE_MOVE: the group's entity re-weighted, or gone with its lag
    /// when it was the group's last task here), that entity goes back among the root's waiting
    /// ones (put_prev_entity), the task joins the new group's run-queue here, empty, at its V
    /// (place_entity applies no lag to an empty run-queue; its deadline as far ahead as it was),
    /// the new group's entity joins the root (enqueue_entity), and both are the running ones
    /// again (set_next_task). The caller then picks (sched_move_task's resched_curr).
    pub(crate) fn move_to_new_group(&mut self, q: &EventQueue, cpu: usize, task: usize) {
        let new = self.new_group();
        let old = self.group_of(task);
        self.tasks[task].attrs.group = Some(new);
        if self.rt_prio(task).is_some() {
            return;
        }
        self.update_curr(q, cpu);
        self.root_update_curr(q, cpu);
        let w = self.tasks[task].weight();
        if let Some(old) = old {
            self.group_task_left(q, cpu, old, w, false);
        }
        self.root_set_next(q, cpu, None);
        self.group_task_joined(q, cpu, new, task);
        self.fair_set_next(q, cpu, task);
    }

    /// Group `g`'s delayed entity leaves `cpu`'s root as the pick chose it (dequeue_entity
    /// with DEQUEUE_DELAYED): with its lag, a positive one dropped.
    pub(crate) fn group_finish_delayed(&mut self, q: &EventQueue, cpu: usize, g: usize) {
        self.root_update_curr(q, cpu);
        let lag = self.group_lag(cpu, g, &self.root_load(cpu));
        self.group_leave_tree(cpu, g);
        let e = &mut self.cpus[cpu].groups[g].entity;
        e.delayed = false;
        e.vlag = lag.min(0);
    }

    /// entity_tick at the root for group `g`'s running entity on `cpu`: its runtime
    /// accounted, then its shares (update_cfs_group).
    pub(crate) fn group_tick(&mut self, q: &EventQueue, cpu: usize, g: usize) {
        self.root_update_curr(q, cpu);
        self.update_tg_load(q, cpu, g);
        self.group_reweight(q, cpu, g);
    }

    /// update_cfs_group for group `g`'s entity on `cpu`: its shares for the group's load now,
    /// and where they changed, reweight_entity: the queued entity is re-placed at its new
    /// weight ([`reweighted_vruntime`]), its deadline kept relative to its vruntime and
    /// scaled, and the running one loses its slice protection (its vprot, or before 6.17 the
    /// deadline stashed in vlag, overwritten by the lag).
    pub(crate) fn group_reweight(&mut self, q: &EventQueue, cpu: usize, g: usize) {
        if self.cpus[cpu].groups[g].entity.tasks == 0 {
            return;
        }
        let w = self.group_shares(q, cpu, g);
        let w_old = self.cpus[cpu].groups[g].entity.weight;
        if w == w_old {
            return;
        }
        let rules = self.rules();
        self.root_update_curr(q, cpu);
        let running = self.cpus[cpu].root_curr_group == Some(g);
        let lag = self.group_lag(cpu, g, &self.root_load(cpu));
        let others = self.root_load_without_group(cpu, g);
        self.group_leave_tree(cpu, g);
        let e = &mut self.cpus[cpu].groups[g].entity;
        let rel = (e.deadline.saturating_sub(e.vruntime) as u128 * w_old as u128 / w as u128) as u64;
        e.vruntime = reweighted_vruntime(e.vruntime, lag, w_old, w, &others, running);
        e.deadline = e.vruntime + rel;
        e.weight = w;
        if running {
            e.vprot = if rules.protect_by_vruntime { 0 } else { e.deadline.wrapping_add(1) };
        }
        self.group_enter_tree(cpu, g);
    }

    /// Group `g`'s shares on `cpu` (calc_group_shares): its load here, the larger of its
    /// queued tasks' weight and its load average, against the loads the other CPUs last told
    /// the group's total (tg->load_avg less this CPU's part) plus its own here.
    fn group_shares(&mut self, q: &EventQueue, cpu: usize, g: usize) -> u64 {
        // A CPU where the group has nothing queued still tells its decaying blocked load, from
        // its load balancer's update_blocked_averages (taken here as current within the
        // millisecond rate limit).
        for other in 0..self.cpus.len() {
            if other != cpu && !self.cpus[other].groups[g].entity.on_rq() {
                self.update_tg_load(q, other, g);
            }
        }
        let load = self.cpus[cpu].groups[g].entity.tasks_weight.max(self.group_load_avg(q, cpu, g));
        let others: u64 =
            self.cpus.iter().enumerate().filter(|&(c, _)| c != cpu).map(|(_, c)| c.groups[g].contrib).sum();
        shares(load, others + load)
    }

    /// update_tg_load_avg for group `g` on `cpu`, at the group's load-average updates there
    /// (a task's enqueue or dequeue, the tick): the group's total takes this CPU's load average
    /// if the last time was a millisecond ago or more and it moved by more than 1/64.
    fn update_tg_load(&mut self, q: &EventQueue, cpu: usize, g: usize) {
        let now = q.now();
        if self.cpus[cpu].groups[g].contrib_at.is_some_and(|at| now.saturating_sub(at) < TG_LOAD_UPDATE_NS) {
            return;
        }
        let avg = self.group_load_avg(q, cpu, g);
        let rq = &mut self.cpus[cpu].groups[g];
        if avg.abs_diff(rq.contrib) > rq.contrib / 64 {
            rq.contrib = avg;
            rq.contrib_at = Some(now);
        }
    }

    /// Group `g`'s load average on `cpu` (its run-queue's avg.load_avg): the load averages of
    /// its tasks there, those waiting and running as last updated, a sleeping one's decayed to
    /// now on its CPU's PELT clock (its blocked load, left where it last ran). Tasks that
    /// exited or left the group are dropped from its list here.
    fn group_load_avg(&mut self, q: &EventQueue, cpu: usize, g: usize) -> u64 {
        let (mut sum, mut stale) = (0, false);
        for &t in &self.group_members[g] {
            let task = &self.tasks[t];
            if task.state == TaskState::Exited || task.attrs.group != Some(g) {
                stale = true;
            } else if task.cpu == cpu {
                sum += self.task_avg_now(q, t, |a| a.load_avg);
            }
        }
        if stale {
            let tasks = &self.tasks;
            self.group_members[g].retain(|&t| tasks[t].state != TaskState::Exited && tasks[t].attrs.group == Some(g));
        }
        sum
    }

    /// The root's sums without group `g`'s entity.
    fn root_load_without_group(&self, cpu: usize, g: usize) -> Load {
        let e = &self.cpus[cpu].groups[g].entity;
        let mut load = self.root_load(cpu);
        if e.on_rq() {
            load.sub(e.vruntime, e.weight);
        }
        load
    }

    /// Group `g`'s entity's lag against `load` (the sums with it counted), clamped to the lag
    /// limit in its own virtual time (update_entity_lag's calc_delta_fair).
    fn group_lag(&self, cpu: usize, g: usize, load: &Load) -> i64 {
        let e = &self.cpus[cpu].groups[g].entity;
        let avg = load.avg_vruntime().unwrap_or(e.vruntime);
        eevdf::clamped_lag(avg, e.vruntime, self.rules().lag_limit(e.weight))
    }

    /// Take group `g`'s entity out of the root's tree, where it waits (not while it runs).
    fn group_leave_tree(&mut self, cpu: usize, g: usize) {
        let c = &mut self.cpus[cpu];
        let e = &c.groups[g].entity;
        if c.root.by_deadline.contains(&(e.deadline, e.joined, entity_id(g))) {
            c.root.remove(entity_id(g), e.joined, e.vruntime, e.deadline, e.weight);
        }
    }

    /// Put group `g`'s queued entity in the root's tree unless it runs.
    fn group_enter_tree(&mut self, cpu: usize, g: usize) {
        let c = &mut self.cpus[cpu];
        let e = &c.groups[g].entity;
        if e.on_rq() && c.root_curr_group != Some(g) {
            c.groups[g].entity.joined = c.root.insert(entity_id(g), e.vruntime, e.deadline, e.weight);
        }
    }

    /// set_next_entity at the root as `task` is switched in: a task of a group makes its
    /// group's entity the running one, re-armed for its slice only when the root picks it
    /// anew (another entity ran before it, or none); the entity that ran before (another
    /// group's, or any for a task outside the groups) goes back among the waiting ones
    /// (put_prev_entity, its runtime accounted first).
    pub(crate) fn root_set_next(&mut self, q: &EventQueue, cpu: usize, task: Option<usize>) {
        let next = task.and_then(|t| self.group_of(t));
        let prev = self.cpus[cpu].root_curr_group;
        if next == prev {
            return;
        }
        if let Some(p) = prev {
            self.root_update_curr(q, cpu);
            self.cpus[cpu].root_curr_group = None;
            self.group_enter_tree(cpu, p);
        }
        if let Some(n) = next {
            self.group_leave_tree(cpu, n);
            self.clear_root_buddy(cpu, n);
            let c = &mut self.cpus[cpu];
            c.root_curr_group = Some(n);
            let e = &mut c.groups[n].entity;
            e.exec_start = q.now();
            e.vprot = e.deadline;
        }
    }

    /// The root's pick (pick_eevdf at the root; a scheduling pick, `buddy`, takes the next
    /// buddy first when it is eligible: pick_next_entity's PICK_BUDDY): a group's entity (as
    /// its [`entity_id`]) or a task outside the groups. `with_curr`: the running task
    /// competes; otherwise only a group entity still current after its task left does.
    pub(crate) fn root_peek(&self, cpu: usize, with_curr: bool, protect: bool, buddy: bool) -> Option<usize> {
        let rules = self.rules();
        let c = &self.cpus[cpu];
        let load = self.root_load(cpu);
        if buddy {
            let next = c.root_next_buddy.filter(|&g| c.groups[g].entity.on_rq());
            if let Some(g) = next.filter(|&g| load.eligible(c.groups[g].entity.vruntime)) {
                return Some(entity_id(g));
            }
        }
        let curr_group = c.root_curr_group.filter(|&g| c.groups[g].entity.on_rq());
        let running = if let Some(g) = curr_group {
            let e = &c.groups[g].entity;
            let entity = Entity { task: entity_id(g), vruntime: e.vruntime, deadline: e.deadline };
            Some(Running { entity, protected: rules.protected(e.vruntime, e.deadline, e.vprot) })
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
            let vruntime = match group_of_entity(id) {
                Some(g) => c.groups[g].entity.vruntime,
                None => self.tasks[id].vruntime,
            };
            Entity { task: id, vruntime, deadline }
        });
        eevdf::pick(&load, queued, running, protect, rules.curr_wins_ties)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::task::Op;

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

    /// Three CPU-bound tasks pinned to CPU 0 for `ms`, with task groups (`autogroup`) or
    /// without: a parent's two children of its session, and one that starts a session of its
    /// own (`Op::Setsid`) before it works. The parent waits for them. Their CPU time, ns.
    fn three_children_one_in_its_own_session(autogroup: bool, ms: u64) -> Vec<u64> {
        use crate::sim::test_support::{run, run_on_kvm_guest, Tasks};
        use crate::sim::SimConfig;
        use crate::workload::TaskSpec;
        let parent =
            vec![Op::Spawn { program: 0, count: 2 }, Op::Spawn { program: 1, count: 1 }, Op::WaitChildren, Op::Exit];
        let work = || vec![run(1e12), Op::Exit];
        let own_session = [vec![Op::Setsid], work()].concat();
        let workload = Tasks {
            tasks: vec![TaskSpec::new("parent", parent.into()).pinned(vec![0])],
            programs: vec![work().into(), own_session.into()],
            devices: Vec::new(),
        };
        let spec = format!("test:autogroup={},kthread_hz=0", u8::from(autogroup));
        let cfg = SimConfig::new("performance:kernel=6.18", spec).duration_ns(Some(ms * 1_000_000));
        let sim = run_on_kvm_guest(&cfg, workload);
        let children: Vec<&crate::sched::task::Task> = sim.sched.tasks.iter().filter(|t| t.parent == Some(0)).collect();
        assert_eq!(children.len(), 3);
        if autogroup {
            // The parent's session is group 0, its two children's too; the third has a
            // group of its own, made when it called setsid.
            assert_eq!(sim.sched.tasks[0].attrs.group, Some(0));
            let groups: Vec<Option<usize>> = children.iter().map(|t| t.attrs.group).collect();
            assert_eq!(groups, [Some(0), Some(0), Some(1)]);
            assert_eq!(sim.sched.cpus[0].groups.len(), 2);
        }
        children.iter().map(|t| t.sum_exec_ns).collect()
    }

    #[test]
    fn a_task_that_starts_a_session_gets_its_groups_share_of_the_cpu() {
        // Without groups the three share the CPU equally; with them the two sessions do
        // (autogroup's fairness between sessions), so the one of its own gets half the CPU
        // and the other two a quarter each.
        let ms = 300;
        let share = |times: &[u64]| -> Vec<f64> {
            let total: u64 = times.iter().sum();
            times.iter().map(|&t| t as f64 / total as f64).collect()
        };
        let flat = share(&three_children_one_in_its_own_session(false, ms));
        for s in &flat {
            assert!((s - 1.0 / 3.0).abs() < 0.03, "{flat:?}");
        }
        let grouped = share(&three_children_one_in_its_own_session(true, ms));
        assert!((grouped[2] - 0.5).abs() < 0.03, "{grouped:?}");
        assert!((grouped[0] - 0.25).abs() < 0.03 && (grouped[1] - 0.25).abs() < 0.03, "{grouped:?}");
    }

    /// One session's two tasks on the 2-CPU guest, one busy on CPU 0, the other on CPU 1
    /// running and sleeping 200 µs in turn, run for `ns`: the group's entity weight on CPU 0
    /// and the load CPU 1 last told the group's total.
    fn busy_beside_half_busy(ns: u64) -> (u64, u64) {
        use crate::sched::task::Amount;
        use crate::sim::test_support::{run, run_on_kvm_guest, Tasks};
        use crate::sim::SimConfig;
        use crate::workload::TaskSpec;
        let busy = vec![run(1e12), Op::Exit];
        let half = vec![
            Op::RunFor { ns: Amount::Fixed(200_000.0) },
            Op::Sleep { ns: Amount::Fixed(200_000.0) },
            Op::Jump { to: 0 },
        ];
        let workload = Tasks {
            tasks: vec![
                TaskSpec::new("busy", busy.into()).pinned(vec![0]),
                TaskSpec::new("half", half.into()).pinned(vec![1]),
            ],
            programs: Vec::new(),
            devices: Vec::new(),
        };
        let cfg = SimConfig::new("performance:kernel=6.18", "test:autogroup=1,kthread_hz=0").duration_ns(Some(ns));
        let sim = run_on_kvm_guest(&cfg, workload);
        (sim.sched.cpus[0].groups[0].entity.weight, sim.sched.cpus[1].groups[0].contrib)
    }

    #[test]
    fn a_sleeping_tasks_load_stays_in_its_groups_total_so_the_other_cpus_weight_holds() {
        // CPU 1's task is runnable half the time: its load average, blocked load included,
        // is about half a nice-0 weight whether it sleeps or runs at the moment, and CPU 0's
        // share of the group is 1024 · 1024 / (1024 + ~512), about 683, at every phase of its
        // sleeps (were a sleeping task's load dropped, CPU 1 would count 0 or 1024 by phase
        // and CPU 0's weight swing between 512 and 1024).
        for k in 0..6 {
            let (weight, contrib) = busy_beside_half_busy(200_000_000 + k * 67_000);
            assert!((380..=650).contains(&contrib), "CPU 1's load {contrib} at phase {k}");
            assert!((600..=760).contains(&weight), "CPU 0's weight {weight} at phase {k}");
        }
    }

    #[test]
    fn task_groups_are_modelled_from_6_14_to_6_18() {
        assert!(!modelled(KernelVersion(6, 13, 0)));
        assert!(modelled(KernelVersion(6, 14, 0)) && modelled(KernelVersion(6, 18, 0)));
        assert!(!modelled(KernelVersion(6, 19, 0)));
    }
}
