//! A guest kernel's vCPU packing (the platform's `vcpu_pack`; not mainline Linux): before the
//! kernel's own placement, `select_task_rq_fair` looks for a vCPU that is already running
//! something and has room for the task, so that no halted vCPU needs an IPI. As read in a
//! build of the recording guest's kernel (its `vcpu_pack_room` and the start of its
//! `select_task_rq_fair`, docs/platform-format.md), for a fair task allowed on more than one
//! CPU:
//!
//! ```text
//!   wake-up   1  from an interrupt taken by an idle vCPU: that vCPU
//!             2  synchronous: the waker's vCPU, if it has room
//!             4  the previous vCPU, if busy and with room; else the waker's, if it has room;
//!                else the first busy vCPU with room
//!   fork/exec 8  the forking (exec'ing) vCPU, if it has room
//! ```
//! (the numbers are the bits of `sched_vcpu_pack`); otherwise the kernel's own placement. A
//! vCPU has room when no wake-up is pending for it, it runs fair tasks only, at most one of them
//! runnable besides the task itself, and its CFS utilisation (with the task's when the task
//! last ran elsewhere) stays under the limit. A packed wake-up returns before
//! `select_task_rq_fair`'s record_wakee.
//!
//! A preset may instead give the rule inferred from recordings of builds not read
//! ([`VcpuPack::Inferred`]): a woken task stays on its previous vCPU, busy or not, while it has
//! room, unless an interrupt on an idle vCPU wakes it after its own vCPU has idled a while;
//! a new task starts on the forking vCPU while it has room.

use crate::hw::platform::VcpuPack;
use crate::sched::task::TaskState;
use crate::sched::waker::{WakeContext, Waker};
use crate::sim::Sim;

impl Sim {
    /// The vCPU a waking `task` is packed onto, None for the kernel's own placement.
    pub(crate) fn packed_wake_cpu(&self, task: usize, waker: Waker) -> Option<usize> {
        let pack = self.machine.plat.file.vcpu_pack?.rule();
        if !matches!(pack, VcpuPack::Read { .. }) || waker == Waker::Requeue || !self.reaches_fair_placement(task) {
            return None;
        }
        let prev = self.sched.tasks[task].cpu;
        // The CPU running try_to_wake_up, and whether its current task is the idle one (an
        // interrupt or its softirq taken while the vCPU idled).
        let (this, context) = waker.logged_on(prev);
        let from_idle = context != WakeContext::Task && self.sched.cpu_is_idle(this);
        if pack.packs(VcpuPack::IRQ_ON_IDLE) && from_idle && self.sched.allowed(task, this) {
            return Some(this);
        }
        let sync = waker.placement_source().is_some_and(|(_, sync)| sync);
        if pack.packs(VcpuPack::SYNC_WAKE) && sync && self.vcpu_pack_room(pack, task, this) {
            return Some(this);
        }
        if !pack.packs(VcpuPack::WAKE) {
            return None;
        }
        if !self.sched.cpu_is_idle(prev) && self.vcpu_pack_room(pack, task, prev) {
            return Some(prev);
        }
        if self.vcpu_pack_room(pack, task, this) {
            return Some(this);
        }
        (0..self.sched.cpus.len()).find(|&c| !self.sched.cpu_is_idle(c) && self.vcpu_pack_room(pack, task, c))
    }

    /// The inferred rule's placement of a woken task, where select_task_rq_fair's fast path
    /// begins: an interrupt taken by an idle vCPU (a block completion) takes the task when the
    /// task's vCPU has been idle a while; otherwise the previous vCPU keeps it while it has
    /// room. `waker`: the waker's CPU and whether it is synchronous.
    pub(crate) fn inferred_wake_cpu(&self, task: usize, waker: Option<(usize, bool)>) -> Option<usize> {
        let pack = self.machine.plat.file.vcpu_pack?.rule();
        if !matches!(pack, VcpuPack::Inferred { .. }) {
            return None;
        }
        let ok = |c: usize| self.sched.allowed(task, c);
        let prev = self.sched.tasks[task].cpu;
        if let Some((w, _)) = waker.filter(|&(w, _)| w != prev && ok(w)) {
            let prev_idle_ns = self.q.now().saturating_sub(self.sched.cpus[prev].idle_entered);
            if self.sched.cpu_is_idle(w) && self.sched.cpu_is_idle(prev) && pack.idle_takeover(prev_idle_ns) {
                return Some(w);
            }
        }
        // The previous vCPU's utilisation still holds the task's recent runs there; the task's
        // own is added all the same, the form the measurements on the guest were fitted with.
        let cpu_util = self.sched.cpu_util_now(&self.machine, &self.q, prev);
        let task_util = self.sched.task_util_avg_now(&self.q, task);
        (ok(prev) && pack.has_room(cpu_util, task_util, self.machine.plat.cpus[prev].cap_orig)).then_some(prev)
    }

    /// The vCPU a new task (`exec` false) or an exec'ing one stays on, `cpu` (its parent's, or
    /// its own), when `cpu` has room; None for fork or exec balancing. The inferred rule counts
    /// the new task's utilisation as none and packs no exec.
    pub(crate) fn packed_new_task_cpu(&self, task: usize, cpu: usize, exec: bool) -> Option<usize> {
        let pack = self.machine.plat.file.vcpu_pack?.rule();
        if let VcpuPack::Inferred { .. } = pack {
            let cpu_util = self.sched.cpu_util_now(&self.machine, &self.q, cpu);
            let room = pack.has_room(cpu_util, 0, self.machine.plat.cpus[cpu].cap_orig);
            return (!exec && room && self.sched.allowed(task, cpu)).then_some(cpu);
        }
        let packs = pack.packs(VcpuPack::NEW_TASK) && self.reaches_fair_placement(task);
        (packs && self.vcpu_pack_room(pack, task, cpu)).then_some(cpu)
    }

    /// vcpu_pack_room: whether `cpu` has room for `task`.
    fn vcpu_pack_room(&self, pack: VcpuPack, task: usize, cpu: usize) -> bool {
        let s = &self.sched;
        let c = &s.cpus[cpu];
        // A wake-up queued for the vCPU's IPI (rq->ttwu_pending), or a task of another class
        // (rq->nr_running above cfs.h_nr_queued).
        if !s.allowed(task, cpu) || c.vcpu_wake_ns.is_some() || s.rt_runnable(cpu) {
            return false;
        }
        // cfs.h_nr_runnable: the task itself, when queued or running there, does not count.
        let t = &s.tasks[task];
        let own = t.cpu == cpu && t.state == TaskState::Runnable;
        let runnable = c.curr.iter().chain(&c.queue).count();
        if runnable > 1 + usize::from(own) {
            return false;
        }
        // cpu_util_cfs, and the task's own utilisation (task_util_est) where it is not counted yet.
        let mut util = s.cpu_util_now(&self.machine, &self.q, cpu);
        if t.cpu != cpu {
            util += s.task_util_est(&self.q, task);
        }
        pack.util_fits(util, self.capacity_of(cpu))
    }
}
