//! The fair class under EEVDF (Linux 6.6 and later): the simulator's run-queues and tasks
//! through the arithmetic of `sched/eevdf.rs`. A waking task is placed with the lag it left
//! with (place_entity), a blocking one leaves with its lag (update_entity_lag) or, from 6.12,
//! stays queued while it is not eligible (DELAY_DEQUEUE); the next task is the eligible one
//! with the earliest deadline (pick_eevdf); a woken task preempts the running one when it is
//! that pick (check_preempt_wakeup_fair); the running task's accounting renews its deadline
//! and asks for a reschedule (update_curr). Before 6.6 the scheduler is CFS-like
//! (`sched/mod.rs`).
//!
//! With task groups (`sched/group.rs`) each rule applies at the level of the task's run-queue:
//! its group's for a task in one, the root's for the others and for the groups' entities.
//!
//! Left out: nice levels and custom slices (every task has nice 0 and the base slice, so
//! PREEMPT_SHORT never applies), NEXT_BUDDY (off by default), a
//! delayed task's share of the PELT sums (it leaves them when it blocks, as a sleeping task
//! does), and load balancing of delayed tasks (only waiting ones move).

use crate::engine::EventQueue;
use crate::sched::eevdf::{self, clamped_lag, Entity, Load, Queue, Rules, Running};
use crate::sched::group::group_of_entity;
use crate::sched::Sched;

/// How a task joins a run-queue (enqueue_task's flags, as far as placement reads them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Join {
    /// A new task (ENQUEUE_INITIAL: half a slice to its first deadline).
    Fork,
    /// A sleeping task woken (ENQUEUE_WAKEUP: placed with its lag).
    Wake,
    /// A delayed task woken where it waits (ENQUEUE_DELAYED): already placed.
    Requeue,
}

impl Sched {
    pub(crate) fn rules(&self) -> Rules {
        self.eevdf.expect("EEVDF rules (kernel 6.6 or later)")
    }

    /// The running task of `cpu` if it is a fair one.
    pub(crate) fn fair_curr(&self, cpu: usize) -> Option<usize> {
        self.cpus[cpu].curr.filter(|&t| self.rt_prio(t).is_none())
    }

    /// The load sums of the run-queue `task` competes in on `cpu` (every fair task's without
    /// task groups; with them its group's, or the root's), its running entity included.
    pub(crate) fn level_load(&self, cpu: usize, task: usize) -> Load {
        let level = self.group_of(task);
        if level.is_none() && self.groups {
            return self.root_load(cpu);
        }
        let load = self.level_queue_of(cpu, level).load;
        match self.fair_curr(cpu).filter(|&c| self.group_of(c) == level) {
            Some(c) => load.with(self.tasks[c].vruntime, self.tasks[c].weight()),
            None => load,
        }
    }

    /// The run-queue of `level` on `cpu`: group g's (`Some(g)`) or the root's.
    fn level_queue_of(&self, cpu: usize, level: Option<usize>) -> &Queue {
        match level {
            Some(g) => &self.cpus[cpu].groups[g].queue,
            None => &self.cpus[cpu].root,
        }
    }

    /// The run-queue `task` waits in on `cpu`: its group's, or the root's.
    fn level_queue(&mut self, cpu: usize, task: usize) -> &mut Queue {
        match self.group_of(task) {
            Some(g) => &mut self.cpus[cpu].groups[g].queue,
            None => &mut self.cpus[cpu].root,
        }
    }

    /// Delayed tasks queued on `cpu` (h_nr_delayed), at every level.
    pub(crate) fn delayed_tasks(&self, cpu: usize) -> usize {
        let c = &self.cpus[cpu];
        c.root.delayed + c.groups.iter().map(|g| g.queue.delayed).sum::<usize>()
    }

    /// V of `load` on `cpu`; with no task there, the run-queue's own reference
    /// (min_vruntime, which avg_vruntime returns for an empty run-queue).
    pub(crate) fn fair_avg(&self, cpu: usize, load: &Load) -> u64 {
        load.avg_vruntime().unwrap_or(self.cpus[cpu].min_vruntime)
    }

    /// Count a fair task among `cpu`'s queued ones (__enqueue_entity), with its vruntime and
    /// deadline as they are now.
    pub(crate) fn fair_enqueue(&mut self, cpu: usize, task: usize) {
        if self.rt_prio(task).is_some() {
            return;
        }
        let (v, d, w) = (self.tasks[task].vruntime, self.tasks[task].deadline, self.tasks[task].weight());
        self.tasks[task].joined = self.level_queue(cpu, task).insert(task, v, d, w);
    }

    /// Take a fair task out of `cpu`'s queued ones (__dequeue_entity).
    pub(crate) fn fair_dequeue(&mut self, cpu: usize, task: usize) {
        if self.rt_prio(task).is_some() {
            return;
        }
        let t = &self.tasks[task];
        let (joined, v, d, w) = (t.joined, t.vruntime, t.deadline, t.weight());
        self.level_queue(cpu, task).remove(task, joined, v, d, w);
    }

    /// place_entity: `task` joins `cpu` at V less its lag (inflated for its own weight), with
    /// a deadline one slice on (half of one for a new task), or the relative deadline a move
    /// from another CPU carried. The running task is accounted first (enqueue_entity's
    /// update_curr), so that V is today's. A task of the group then brings the group's entity
    /// to the root, or re-weights it there (`sched/group.rs`).
    pub(crate) fn fair_place(&mut self, q: &EventQueue, task: usize, cpu: usize, join: Join) {
        let rules = self.rules();
        if self.fair_curr(cpu).is_some() {
            self.update_curr(q, cpu);
        }
        if self.groups && !self.grouped(task) {
            self.root_update_curr(q, cpu);
        }
        let load = self.level_load(cpu, task);
        let avg = self.fair_avg(cpu, &load);
        let t = &mut self.tasks[task];
        t.vruntime = eevdf::placed_vruntime(avg, t.vlag, load.weight(), t.weight());
        t.deadline = match t.rel_deadline.take() {
            Some(rel) => t.vruntime + rel,
            None => rules.deadline(t.vruntime, t.weight(), join == Join::Fork),
        };
        if let Some(g) = self.group_of(task) {
            self.group_task_joined(q, cpu, g, task);
        }
    }

    /// update_curr's EEVDF part, after the running fair task `curr` of `cpu` ran: a deadline
    /// reached is renewed one slice on (update_deadline), and with other tasks queued the CPU
    /// is asked to reschedule when it was renewed, or by the version's further rule (see
    /// [`eevdf::Resched`]).
    pub(crate) fn fair_update_curr(&mut self, cpu: usize, curr: usize) {
        let rules = self.rules();
        let t = &mut self.tasks[curr];
        let renewed = t.vruntime >= t.deadline;
        if renewed {
            t.deadline = rules.deadline(t.vruntime, t.weight(), false);
        }
        if self.level_queue(cpu, curr).is_empty() {
            return;
        }
        let t = &self.tasks[curr];
        let protected = rules.protected(t.vruntime, t.deadline, t.vprot);
        let resched = renewed
            || match rules.resched {
                eevdf::Resched::Deadline => false,
                eevdf::Resched::Ineligible => !protected && !self.level_load(cpu, curr).eligible(t.vruntime),
                eevdf::Resched::Unprotected => !protected,
            };
        if resched {
            self.cpus[cpu].resched = true;
        }
    }

    /// set_next_entity: a fair task picked to run on `cpu` is protected until it has used the
    /// slice it was picked with (RUN_TO_PARITY; the kernel stashes the deadline, in vlag
    /// before 6.17 and vprot after). Any reschedule asked for was for the task before. With
    /// task groups the root sets its running entity too (`Sched::root_set_next`).
    pub(crate) fn fair_set_next(&mut self, q: &EventQueue, cpu: usize, task: usize) {
        if self.eevdf.is_some() && self.rt_prio(task).is_none() {
            let t = &mut self.tasks[task];
            t.vprot = t.deadline;
        }
        if self.groups {
            let fair = self.rt_prio(task).is_none().then_some(task);
            self.root_set_next(q, cpu, fair);
        }
        // What the switch's own accounting asked is for the task switched out (__schedule
        // clears it after the pick).
        self.cpus[cpu].resched = false;
    }

    /// dequeue_entity for `task` going to sleep on `cpu`, after it left the CPU: from 6.12 a
    /// task that is not eligible stays queued, delayed, to burn off its negative lag
    /// (DELAY_DEQUEUE); otherwise it leaves with its lag, clamped (update_entity_lag), and a
    /// task of the group takes the group's entity along when it was the last one there.
    pub(crate) fn fair_block(&mut self, q: &EventQueue, cpu: usize, task: usize) {
        if self.rt_prio(task).is_some() {
            return;
        }
        let rules = self.rules();
        let (v, w) = (self.tasks[task].vruntime, self.tasks[task].weight());
        let load = self.level_load(cpu, task).with(v, w);
        if rules.delay_dequeue && !load.eligible(v) {
            self.tasks[task].delayed = true;
            self.fair_enqueue(cpu, task);
            self.level_queue(cpu, task).delayed += 1;
            return;
        }
        self.tasks[task].vlag = clamped_lag(self.fair_avg(cpu, &load), v, rules.lag_limit(w));
        if let Some(g) = self.group_of(task) {
            self.group_task_left(q, cpu, g, self.tasks[task].weight(), true);
        }
    }

    /// An exiting task leaves `cpu` for good: a task of a group as after a sleep.
    pub(crate) fn fair_exit(&mut self, q: &EventQueue, cpu: usize, task: usize) {
        if let Some(g) = self.group_of(task).filter(|_| self.eevdf.is_some() && self.rt_prio(task).is_none()) {
            self.group_task_left(q, cpu, g, self.tasks[task].weight(), true);
        }
    }

    /// A delayed task leaves `cpu`'s queue for good (dequeue_entity with DEQUEUE_DELAYED, when
    /// the pick chose it, or when it must wake elsewhere): with its lag against the run-queue
    /// it was in, a positive one dropped (DELAY_ZERO).
    pub(crate) fn fair_finish_delayed(&mut self, q: &EventQueue, cpu: usize, task: usize) {
        if self.fair_curr(cpu).is_some() {
            self.update_curr(q, cpu);
        }
        let rules = self.rules();
        let load = self.level_load(cpu, task);
        let lag = clamped_lag(
            self.fair_avg(cpu, &load),
            self.tasks[task].vruntime,
            rules.lag_limit(self.tasks[task].weight()),
        );
        self.fair_dequeue(cpu, task);
        self.level_queue(cpu, task).delayed -= 1;
        let t = &mut self.tasks[task];
        t.delayed = false;
        t.vlag = lag.min(0);
        if let Some(g) = self.group_of(task) {
            self.group_task_left(q, cpu, g, self.tasks[task].weight(), true);
        }
    }

    /// A delayed task woken where it waits (ttwu_runnable → requeue_delayed_entity): its lag
    /// is read against the run-queue as it stands, the running task's vruntime as last
    /// accounted (nothing brings it up to now on this path); a positive lag is dropped, the
    /// task placed at V of the others (DELAY_ZERO), else it keeps its vruntime and deadline.
    /// The task leaves the queue here; the enqueue that follows puts it back as waiting. A task
    /// of the group re-weights the group's entity (enqueue_task_fair's update_cfs_group).
    pub(crate) fn fair_requeue_delayed(&mut self, q: &EventQueue, cpu: usize, task: usize) {
        let rules = self.rules();
        let load = self.level_load(cpu, task);
        let lag = clamped_lag(
            self.fair_avg(cpu, &load),
            self.tasks[task].vruntime,
            rules.lag_limit(self.tasks[task].weight()),
        );
        self.fair_dequeue(cpu, task);
        self.level_queue(cpu, task).delayed -= 1;
        self.tasks[task].delayed = false;
        self.tasks[task].vlag = lag.min(0);
        if let Some(g) = self.group_of(task) {
            self.group_reweight(q, cpu, g);
        }
        if lag > 0 {
            let others = self.level_load(cpu, task);
            let avg = self.fair_avg(cpu, &others);
            let t = &mut self.tasks[task];
            t.vruntime = avg;
            t.deadline = rules.deadline(avg, t.weight(), false);
        }
    }

    /// pick_eevdf on `cpu` without changing anything, among the tasks of one run-queue,
    /// `level`: group g's (`Some(g)`), or the root's when there are no task groups (with them,
    /// [`Sched::peek_at`]). The eligible task with the earliest deadline among those queued
    /// there (delayed ones included) and, with `with_curr`, the running one if it is theirs,
    /// which keeps the CPU while its pick protects it when `protect` asks.
    pub(crate) fn fair_peek(&self, cpu: usize, level: Option<usize>, with_curr: bool, protect: bool) -> Option<usize> {
        let rules = self.rules();
        let curr = if with_curr { self.fair_curr(cpu).filter(|&c| self.group_of(c) == level) } else { None };
        let queue = self.level_queue_of(cpu, level);
        let load = match curr {
            Some(c) => queue.load.with(self.tasks[c].vruntime, self.tasks[c].weight()),
            None => queue.load,
        };
        let entity = |task: usize| {
            let t = &self.tasks[task];
            Entity { task, vruntime: t.vruntime, deadline: t.deadline }
        };
        let running = curr.map(|c| {
            let t = &self.tasks[c];
            Running { entity: entity(c), protected: rules.protected(t.vruntime, t.deadline, t.vprot) }
        });
        let queued = queue.by_deadline.iter().map(|&(_, _, task)| entity(task));
        eevdf::pick(&load, queued, running, protect, rules.curr_wins_ties)
    }

    /// pick_eevdf on `cpu` without changing anything at `level` (see [`Sched::fair_peek`]):
    /// with task groups, the root's pick for `None`, among tasks and groups' entities.
    pub(crate) fn peek_at(&self, cpu: usize, level: Option<usize>, with_curr: bool, protect: bool) -> Option<usize> {
        if level.is_none() && self.groups {
            self.root_peek(cpu, with_curr, protect, false)
        } else {
            self.fair_peek(cpu, level, with_curr, protect)
        }
    }

    /// pick_next_entity on `cpu`: [`Sim::fair_peek`], a delayed task it picks leaving the
    /// run-queue and the pick starting again. None when no fair task is left to run. With task
    /// groups the root's running entity is accounted first (pick_task_fair's update_curr), the
    /// root's next buddy goes first when eligible (PICK_BUDDY), and a delayed group entity
    /// picked leaves the root.
    pub(crate) fn fair_pick(&mut self, q: &EventQueue, cpu: usize, with_curr: bool) -> Option<usize> {
        loop {
            let next = if self.groups {
                self.root_update_curr(q, cpu);
                let id = self.root_peek(cpu, with_curr, true, true)?;
                match group_of_entity(id) {
                    Some(g) if self.cpus[cpu].groups[g].entity.delayed => {
                        self.group_finish_delayed(q, cpu, g);
                        continue;
                    }
                    Some(g) => self.fair_peek(cpu, Some(g), with_curr, true)?,
                    None => id,
                }
            } else {
                self.fair_peek(cpu, None, with_curr, true)?
            };
            if !self.tasks[next].delayed {
                return Some(next);
            }
            self.fair_finish_delayed(q, cpu, next);
        }
    }

    /// The wake-up check's pick on `cpu` (check_preempt_wakeup_fair), at the `level` where
    /// the running and the woken task meet: their group's run-queue when both are in one
    /// (`Some(g)`), else the root's (a group's entity standing for its tasks).
    /// Mainline's check only looks ([`Sched::peek_at`]): a delayed entity it finds first is an
    /// answer, and the woken task does not preempt. The reworked check of the 6.18 stable
    /// series (`Rules::reworked_wakeup_check`) picks with pick_next_entity, which dequeues a
    /// delayed entity it picks and picks again.
    pub(crate) fn wakeup_pick(&mut self, q: &EventQueue, cpu: usize, level: Option<usize>) -> Option<usize> {
        let reworked = self.eevdf.is_some_and(|r| r.reworked_wakeup_check);
        loop {
            let pick = self.peek_at(cpu, level, true, true)?;
            if !reworked {
                return Some(pick);
            }
            if let Some(g) = group_of_entity(pick) {
                if !self.cpus[cpu].groups[g].entity.delayed {
                    return Some(pick);
                }
                self.group_finish_delayed(q, cpu, g);
            } else if self.tasks[pick].delayed {
                self.fair_finish_delayed(q, cpu, pick);
            } else {
                return Some(pick);
            }
        }
    }

    /// The fair task that runs next when `cpu` reschedules with its task still runnable: the
    /// pick with the running task competing. None when the running one keeps the CPU.
    pub(crate) fn fair_repick(&mut self, q: &EventQueue, cpu: usize) -> Option<usize> {
        let curr = self.cpus[cpu].curr;
        let next = self.fair_pick(q, cpu, true);
        self.cpus[cpu].resched = false;
        next.filter(|&n| Some(n) != curr)
    }

    /// A fair task leaving `src` without sleeping (a balancer's detach_task): it takes its lag
    /// against `src` along (and, from 6.12, its deadline relative to its vruntime). It is
    /// neither queued on `src` nor running there any more.
    pub(crate) fn fair_detach(&mut self, q: &EventQueue, task: usize, src: usize) {
        if self.rt_prio(task).is_some() {
            return;
        }
        let rules = self.rules();
        let t = &self.tasks[task];
        let load = self.level_load(src, task).with(t.vruntime, t.weight());
        let lag = clamped_lag(self.fair_avg(src, &load), t.vruntime, rules.lag_limit(t.weight()));
        let t = &mut self.tasks[task];
        t.vlag = lag;
        if rules.rel_deadline {
            t.rel_deadline = Some(t.deadline.saturating_sub(t.vruntime));
        }
        if let Some(g) = self.group_of(task) {
            self.group_task_left(q, src, g, self.tasks[task].weight(), false);
        }
    }

    /// The tasks on `cpu` whose dequeue is delayed, at every level, those that ran least
    /// recently first (the order of the run-queue's task list from its tail, where a picked
    /// task moves to the front).
    pub(crate) fn delayed_on(&self, cpu: usize) -> Vec<usize> {
        let c = &self.cpus[cpu];
        let mut delayed: Vec<usize> = c
            .root
            .by_deadline
            .iter()
            .chain(c.groups.iter().flat_map(|g| g.queue.by_deadline.iter()))
            .map(|&(_, _, t)| t)
            .filter(|&t| group_of_entity(t).is_none() && self.tasks[t].delayed)
            .collect();
        delayed.sort_by_key(|&t| (self.tasks[t].exec_start_ns, t));
        delayed
    }

    /// A balancer's detach_task of delayed `task` from `src`: as [`Sched::fair_detach`], its
    /// lag negative since it is not eligible.
    pub(crate) fn fair_detach_delayed(&mut self, q: &EventQueue, task: usize, src: usize) {
        self.fair_dequeue(src, task);
        self.level_queue(src, task).delayed -= 1;
        self.fair_detach(q, task, src);
    }

    /// attach_task of a delayed task detached from another CPU: placed on `dst` with the lag
    /// it brought, and still delayed there, asleep until a wake-up finds it queued
    /// (ttwu_runnable) or a pick dequeues it.
    pub(crate) fn fair_attach_delayed(&mut self, q: &EventQueue, task: usize, dst: usize) {
        self.tasks[task].cpu = dst;
        self.fair_attach(q, task, dst);
        self.fair_enqueue(dst, task);
        self.level_queue(dst, task).delayed += 1;
    }

    /// Whether can_migrate_task leaves waiting `task` on `src` rather than move it to `dst`
    /// for not being eligible (task_is_ineligible_on_dst_cpu, 6.14+; the caller applies it
    /// only while the domain's balancing has not failed): not eligible on `src`, it would
    /// join the tasks at its level on `dst` with the same negative lag, as place_entity keeps
    /// it, and not be eligible there either. An empty `dst` takes it at its V.
    pub(crate) fn keeps_ineligible(&self, task: usize, src: usize, dst: usize) -> bool {
        self.eevdf.is_some_and(|r| r.balance_keeps_ineligible)
            && self.rt_prio(task).is_none()
            && self.level_load(dst, task).weight() > 0
            && !self.level_load(src, task).eligible(self.tasks[task].vruntime)
    }

    /// A fair task detached from another CPU joining `dst` by placement, with the lag it
    /// brought (attach_task).
    pub(crate) fn fair_attach(&mut self, q: &EventQueue, task: usize, dst: usize) {
        if self.rt_prio(task).is_none() {
            self.fair_place(q, task, dst, Join::Wake);
        }
    }

    /// yield_task_fair on `cpu`, whose running fair task yields with others waiting: its
    /// deadline moves a slice on (6.6), or from 6.18 an eligible task forfeits the rest of its
    /// slice, vruntime to its deadline and a new deadline from there. The caller then picks
    /// ([`Sim::fair_repick`]).
    pub(crate) fn fair_yield(&mut self, q: &EventQueue, cpu: usize) {
        let rules = self.rules();
        let curr = self.cpus[cpu].curr.expect("a running task");
        self.update_curr(q, cpu);
        match rules.yield_rule {
            eevdf::Yield::PushDeadline => {
                let t = &mut self.tasks[curr];
                t.deadline += eevdf::calc_delta_fair(rules.slice_ns, t.weight());
            }
            eevdf::Yield::Forfeit => {
                if self.level_load(cpu, curr).eligible(self.tasks[curr].vruntime) {
                    let t = &mut self.tasks[curr];
                    t.vruntime = t.deadline;
                    t.deadline = rules.deadline(t.vruntime, t.weight(), false);
                }
            }
        }
    }

    /// Delayed tasks wake_affine_idle counts on `cpu` as running (6.12–6.13).
    pub(crate) fn affine_delayed(&self, cpu: usize) -> u64 {
        match self.eevdf {
            Some(r) if r.affine_counts_delayed => self.delayed_tasks(cpu) as u64,
            _ => 0,
        }
    }
}
