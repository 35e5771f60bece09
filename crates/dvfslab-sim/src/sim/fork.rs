//! A new task: spawn creates it, start_task places and enqueues it as wake_up_new_task does.

use crate::engine::Event;
use crate::governor::UpdateFlags;
use crate::sched::pelt::initial_task_util;
use crate::sched::{attach_task_avg, fair};
use crate::sim::Sim;
use crate::workload::estimates::kernel::LAUNCHER_WAKEE_FLIPS;
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
        self.sched.any_rt |= !spec.attrs.policy.is_fair();
        task.attrs = spec.attrs;
        self.sched.tasks.push(task);
        if spec.start_ns <= self.q.now() {
            self.timer_wake(id);
        } else {
            self.q.push(spec.start_ns, Event::TimerWake { task: id as u32, token: 0 });
        }
    }

    /// A machine thread that has existed since boot and is first needed now: on `cpu`, asleep,
    /// with no utilisation left and the lag its life so far left it (`vlag`, EEVDF's V − v; a
    /// kernel before EEVDF places a long sleeper by its own rule), so that what needs it wakes
    /// it as the kernel's would. Returns the task.
    pub(crate) fn add_sleeping_kthread(&mut self, spec: TaskSpec, cpu: usize, vlag: i64) -> usize {
        // The machine's, not the benchmark's, and fair: spawn's accounting of either is not needed.
        debug_assert!(spec.attrs.background && spec.attrs.policy.is_fair());
        let id = self.sched.tasks.len();
        let mut task = self.sched.new_task(&self.machine, id, spec.name, spec.program, self.q.now());
        task.attrs = spec.attrs;
        task.placed = true;
        task.cpu = cpu;
        task.vlag = vlag;
        task.avg.last_update_time = self.sched.cpu_pelt_now(cpu);
        self.sched.tasks.push(task);
        id
    }

    /// A new task: fork balancing picks its CPU, its util starts from the destination's spare
    /// capacity (post_init_entity_util_avg), and it is enqueued.
    pub(crate) fn start_task(&mut self, task: usize) {
        // A child forks on its parent's CPU; a workload's first tasks on CPU 0.
        let forked_on = self.sched.tasks[task].cpu;
        match self.sched.tasks[task].parent {
            Some(parent) => self.inherit_wakee(parent, task),
            None => self.inherit_launcher_wakee(task),
        }
        let cpu = match self.packed_fork_cpu(task, forked_on) {
            Some(cpu) => cpu,
            None => self.sched.select_fork_cpu(&self.machine, &self.q, task, forked_on),
        };
        self.update_cpu_pelt(cpu);
        let (rq_util, rq_load) = (self.sched.cpus[cpu].avg.util_avg, self.sched.cpus[cpu].avg.load_avg);
        let util =
            initial_task_util(self.machine.plat.cpus[cpu].cap_orig, rq_util, rq_load, self.sched.tasks[task].weight());
        let pelt_now = self.sched.cpu_pelt_now(cpu);
        let t = &mut self.sched.tasks[task];
        t.placed = true;
        t.cpu = cpu;
        // wake_up_new_task remembers the CPU the task was forked on (task_cpu before fork
        // balancing moves it; sched_fork, in later kernels sched_cgroup_fork, set it to the forking
        // CPU) as the recently used CPU of its first wake-up's select_idle_sibling (4.16+).
        t.recent_used_cpu = Some(forked_on);
        t.avg.last_update_time = pelt_now;
        t.avg.set_util(util);
        // init_entity_runnable_average: a new task starts at its full weight.
        let weight = t.weight();
        t.avg.set_load(weight, weight);
        // wake_up_new_task attaches the new task's util, runnable and load.
        attach_task_avg(&mut self.sched.cpus[cpu].avg, &self.sched.tasks[task].avg);
        self.sched.cpus[cpu].util_changed = true;
        // wake_up_new_task enqueues from the parent's CPU.
        let source = self.sched.tasks[task].parent.map_or(cpu, |p| self.sched.tasks[p].cpu);
        let flags =
            UpdateFlags { remote: self.sched.remote_enqueue(&self.machine, source, cpu), ..UpdateFlags::default() };
        self.enqueue(task, cpu, source, fair::Join::Fork, flags);
    }

    /// A guest kernel's vCPU packing (`sim/vcpu_pack.rs`) keeps a new task on the forking vCPU
    /// while that has room. Only a workload task's forks: a workload's first tasks come from
    /// a launcher whose utilisation the model does not track, and the machine's own threads
    /// (kthreads, the background) exist from boot, where the model starts them when first
    /// needed. Checked on the recordings' guest: a dash loop's children start on the shell's
    /// vCPU 1,352 times in 1,355 (spawn-true), where mainline's fork balancing takes the idle
    /// one; make's, on a vCPU its jobs keep busy, once in 19 (kernbench).
    fn packed_fork_cpu(&self, task: usize, forked_on: usize) -> Option<usize> {
        let t = &self.sched.tasks[task];
        if t.parent.is_none() || t.attrs.background {
            return None;
        }
        self.packed_new_task_cpu(task, forked_on, false)
    }

    /// copy_process's dup_task_struct copies the parent's task_struct whole, and neither
    /// __sched_fork nor sched_fork resets `wakee_flips`, `last_wakee` or
    /// `wakee_flip_decay_ts` (only record_wakee writes them, in every modelled version): a
    /// child starts with its parent's wakee switch count, last wakee and halving time, which
    /// wake_wide then weighs at the child's first wake-ups.
    fn inherit_wakee(&mut self, parent: usize, child: usize) {
        let p = &self.sched.tasks[parent];
        let (flips, last, decay) = (p.wakee_flips, p.last_wakee, p.wakee_flip_decay_ns);
        let c = &mut self.sched.tasks[child];
        c.wakee_flips = flips;
        c.last_wakee = last;
        c.wakee_flip_decay_ns = decay;
    }

    /// A workload's first task is forked by a shell or harness the model does not run: it
    /// inherits that launcher's wakee switch count ([`LAUNCHER_WAKEE_FLIPS`]), halved first a
    /// second after its start. The machine's own threads exist from boot; theirs stay 0.
    fn inherit_launcher_wakee(&mut self, task: usize) {
        let t = &mut self.sched.tasks[task];
        if !t.attrs.background {
            t.wakee_flips = LAUNCHER_WAKEE_FLIPS;
            t.wakee_flip_decay_ns = t.start_ns;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use crate::sched::task::{Amount, Op};
    use crate::sim::test_support::{run, run_on_kvm_guest, Tasks};
    use crate::sim::SimConfig;
    use crate::workload::estimates::kernel::LAUNCHER_WAKEE_FLIPS;
    use crate::workload::TaskSpec;

    /// A parent on CPU 0 that wakes two sleepers in turn (sleeping between, so that no woken
    /// task is left queued in delayed dequeue, which a wake-up would requeue without counting),
    /// then forks a child that waits for a message that never comes: it wakes no one and is
    /// never woken.
    fn waker_forks() -> Tasks {
        let mut parent: Vec<Op> = (0..10)
            .flat_map(|i| [Op::Sleep { ns: Amount::Fixed(200_000.0) }, Op::Post { ch: i % 2, sync: false }])
            .collect();
        // 115 ms of running before the fork, so that its CPU has no room left under the
        // guest's vCPU packing (utilisation past 85% of the capacity) and its load sends the
        // child to the other CPU; the parent then allows every CPU, which its child inherits
        // (dup_task_struct).
        parent.extend([
            run(3e8),
            Op::SetAffinity { cpus: None },
            Op::Spawn { program: 0, count: 1 },
            run(3e6),
            Op::Exit,
        ]);
        let sleeper = |ch: u32| -> Rc<[Op]> { vec![Op::Wait { ch }, run(20_000.0), Op::Jump { to: 0 }].into() };
        Tasks {
            tasks: vec![
                TaskSpec::new("parent", parent.into()).pinned(vec![0]),
                TaskSpec::new("sleeper", sleeper(0)).pinned(vec![0, 1]),
                TaskSpec::new("sleeper", sleeper(1)).pinned(vec![0, 1]),
            ],
            programs: vec![vec![Op::Wait { ch: 9 }, Op::Exit].into()],
            devices: Vec::new(),
        }
    }

    #[test]
    fn a_forked_child_starts_with_its_parents_wakee_state_and_its_forking_cpu_as_recently_used() {
        let cfg = SimConfig::new("performance:kernel=6.18", "test").duration_ns(Some(140_000_000));
        let sim = run_on_kvm_guest(&cfg, waker_forks());
        let tasks = &sim.sched.tasks;
        let (parent, child) = (&tasks[0], tasks.iter().find(|t| t.parent == Some(0)).expect("the child"));
        // The parent started with its launcher's count and switched wakee at each of its ten
        // wake-ups (sleeper 0, 1, 0, ...), all before the fork; the child, which wakes no
        // one, keeps the copy (dup_task_struct).
        assert_eq!(parent.wakee_flips, LAUNCHER_WAKEE_FLIPS + 10);
        assert_eq!(child.wakee_flips, parent.wakee_flips);
        assert_eq!(child.last_wakee, Some(2));
        assert_eq!(child.wakee_flip_decay_ns, parent.wakee_flip_decay_ns);
        // Forked on CPU 0 under its busy parent, fork balancing starts it on idle CPU 1;
        // wake_up_new_task leaves CPU 0 as its recently used CPU.
        assert_eq!(child.cpu, 1);
        assert_eq!(child.recent_used_cpu, Some(0));
    }

    #[test]
    fn a_workloads_first_task_starts_with_its_launchers_wakee_count_a_machine_thread_with_none() {
        // The benchmark's first process is a shell's child, and fork copies the count; a
        // kernel thread has none of the shell's. Neither wakes anyone here, so the counts stay.
        let sleeps: Rc<[Op]> = vec![run(1e5), Op::Wait { ch: 0 }, Op::Exit].into();
        let tasks = Tasks {
            tasks: vec![
                TaskSpec::new("benchmark", sleeps.clone()),
                TaskSpec::new("kworker", sleeps.clone()).background(),
                TaskSpec::new("benchmark", sleeps).start_at(3_000_000),
            ],
            programs: Vec::new(),
            devices: Vec::new(),
        };
        let cfg = SimConfig::new("performance:kernel=6.18", "test").duration_ns(Some(5_000_000));
        let sim = run_on_kvm_guest(&cfg, tasks);
        // The guest's own threads (after the workload's) start as the kworker does.
        assert!(sim.sched.tasks[3..].iter().all(|t| t.attrs.background && t.wakee_flips == 0));
        let flips: Vec<_> = sim.sched.tasks[..3].iter().map(|t| (t.wakee_flips, t.wakee_flip_decay_ns)).collect();
        // Halved first a second after the task starts.
        assert_eq!(flips, [(LAUNCHER_WAKEE_FLIPS, 0), (0, 0), (LAUNCHER_WAKEE_FLIPS, 3_000_000)]);
    }

    /// A parent that forks one child and waits for it in wait4; the child runs 1 ms and exits.
    fn waits_for_child() -> Tasks {
        let parent = vec![run(3e5), Op::Spawn { program: 0, count: 1 }, Op::WaitChildren, run(3e5), Op::Exit];
        Tasks {
            tasks: vec![TaskSpec::new("parent", parent.into())],
            programs: vec![vec![run(3e6), Op::Exit].into()],
            devices: Vec::new(),
        }
    }

    #[test]
    fn an_exiting_child_wakes_its_parent_before_its_last_switch_from_its_own_cpu() {
        for kernel in ["5.15", "6.18"] {
            let cfg = SimConfig::new(format!("performance:kernel={kernel}"), "test")
                .duration_ns(Some(20_000_000))
                .timeline(true);
            let sim = run_on_kvm_guest(&cfg, waits_for_child());
            let tl = sim.run.timeline.as_ref().expect("a timeline");
            let child = sim.sched.tasks.iter().position(|t| t.parent == Some(0)).expect("the child");
            // exit_notify's wake-up of the parent: its sched_waking is the child's, on the
            // child's CPU, in task context (not the idle task's or the next task's).
            let w = tl.waking_task.iter().position(|&t| t == 0).expect("the parent's wake-up");
            assert_eq!(tl.waking_waker[w], child as i64, "kernel {kernel}");
            let exit = tl.process_kind.iter().position(|&k| k == 'X').expect("the child's exit");
            assert_eq!(tl.process_task[exit], child as u32);
            assert_eq!(tl.waking_cpu[w], tl.process_cpu[exit], "kernel {kernel}");
            assert_eq!(tl.waking_context[w], crate::sched::waker::WakeContext::Task);
            // ... logged after sched_process_exit and before the child's final switch-out.
            let last = tl.switch_prev.iter().rposition(|&p| p == child as i64).expect("the child's switch-out");
            assert_eq!(tl.switch_prev_state[last], 'Z', "kernel {kernel}: a zombie until its parent reaps it");
            assert!(tl.process_seq[exit] < tl.waking_seq[w], "kernel {kernel}");
            assert!(tl.waking_seq[w] < tl.switch_seq[last], "kernel {kernel}");
            assert!(sim.sched.tasks[0].state == crate::sched::task::TaskState::Exited);
            // The parent, a first task whose own parent is outside the simulation, is
            // released at its exit.
            let parent_last = tl.switch_prev.iter().rposition(|&p| p == 0).expect("the parent's switch-out");
            assert_eq!(tl.switch_prev_state[parent_last], 'X', "kernel {kernel}");
        }
    }

    /// As [`waits_for_child`], beside a hog pinned to CPU 1, so that the child runs on CPU 0,
    /// where its parent slept.
    fn waits_for_child_beside_hog() -> Tasks {
        let mut w = waits_for_child();
        w.tasks[0] = TaskSpec::new("parent", w.tasks[0].program.clone()).pinned(vec![0]);
        w.tasks.push(TaskSpec::new("hog", vec![run(1e12), Op::Jump { to: 0 }].into()).pinned(vec![1]));
        w
    }

    #[test]
    fn a_parent_woken_at_its_childs_exit_on_its_cpu_runs_after_the_childs_last_switch() {
        for kernel in ["5.15", "6.18"] {
            let cfg = SimConfig::new(format!("performance:kernel={kernel}"), "test")
                .duration_ns(Some(20_000_000))
                .timeline(true);
            let sim = run_on_kvm_guest(&cfg, waits_for_child_beside_hog());
            let tl = sim.run.timeline.as_ref().expect("a timeline");
            let child = sim.sched.tasks.iter().position(|t| t.parent == Some(0)).expect("the child") as i64;
            // The child ran on CPU 0 and woke its parent there: the parent, queued behind
            // the zombie, is not let preempt it; the zombie's last switch (do_task_dead)
            // hands the CPU to the parent.
            let w = tl.waking_task.iter().position(|&t| t == 0).expect("the parent's wake-up");
            assert_eq!((tl.waking_waker[w], tl.waking_cpu[w]), (child, 0), "kernel {kernel}");
            let outs: Vec<usize> = (0..tl.switch_prev.len()).filter(|&i| tl.switch_prev[i] == child).collect();
            let last = *outs.last().expect("the child's switch-out");
            assert!(outs.iter().all(|&i| tl.switch_prev_state[i] != 'R'), "kernel {kernel}: preempted");
            assert_eq!((tl.switch_cpu[last], tl.switch_prev_state[last], tl.switch_next[last]), (0, 'Z', 0));
            assert!(sim.sched.tasks[0].state == crate::sched::task::TaskState::Exited);
        }
    }
}
