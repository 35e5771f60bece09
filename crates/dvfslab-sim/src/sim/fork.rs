//! A new task: spawn creates it, start_task places and enqueues it as wake_up_new_task does.

use crate::engine::Event;
use crate::governor::UpdateFlags;
use crate::sched::pelt::initial_task_util;
use crate::sched::{attach_task_avg, fair};
use crate::sim::Sim;
use crate::workload::SchedPolicy;
use crate::workload::TaskSpec;

impl Sim {
    pub(crate) fn spawn(&mut self, spec: TaskSpec) {
        let id = self.sched.tasks.len();
        let mut task = self.sched.new_task(&self.machine, id, spec.name, spec.program, spec.start_ns);
        self.sched.uclamp_requested(spec.attrs.uclamp_min, spec.attrs.uclamp_max);
        // A run ends when its benchmark's tasks have all exited: kernel threads never do.
        if !spec.attrs.background {
            self.sched.live_tasks += 1;
        }
        self.sched.any_rt |= !matches!(spec.attrs.policy, SchedPolicy::Normal);
        task.attrs = spec.attrs;
        self.sched.tasks.push(task);
        if spec.start_ns <= self.q.now() {
            self.timer_wake(id);
        } else {
            self.q.push(spec.start_ns, Event::TimerWake { task: id as u32, token: 0 });
        }
    }

    /// A new task: fork balancing picks its CPU, its util starts from the destination's spare
    /// capacity (post_init_entity_util_avg), and it is enqueued.
    pub(crate) fn start_task(&mut self, task: usize) {
        // A child forks on its parent's CPU; a workload's first tasks on CPU 0.
        let cpu = self.sched.select_fork_cpu(&self.machine, &self.q, task, self.sched.tasks[task].cpu);
        self.update_cpu_pelt(cpu);
        let (rq_util, rq_load) = (self.sched.cpus[cpu].avg.util_avg, self.sched.cpus[cpu].avg.load_avg);
        let util =
            initial_task_util(self.machine.plat.cpus[cpu].cap_orig, rq_util, rq_load, self.sched.tasks[task].weight);
        let pelt_now = self.sched.cpu_pelt_now(cpu);
        let t = &mut self.sched.tasks[task];
        t.placed = true;
        t.cpu = cpu;
        // wake_up_new_task: the first CPU is the one a wake-up's search remembers.
        t.recent_used_cpu = Some(cpu);
        t.avg.last_update_time = pelt_now;
        t.avg.set_util(util);
        t.avg.load_avg = t.weight;
        // wake_up_new_task attaches the new task's util, runnable and load.
        attach_task_avg(&mut self.sched.cpus[cpu].avg, &self.sched.tasks[task].avg);
        self.sched.cpus[cpu].util_changed = true;
        // wake_up_new_task enqueues from the parent's CPU.
        let source = self.sched.tasks[task].parent.map_or(cpu, |p| self.sched.tasks[p].cpu);
        let flags =
            UpdateFlags { remote: self.sched.remote_enqueue(&self.machine, source, cpu), ..UpdateFlags::default() };
        self.enqueue(task, cpu, fair::Join::Fork, flags);
    }
}
