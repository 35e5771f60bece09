//! The task-program interpreter: a CPU's current task runs its program's operations (run
//! work, sleep, block, wake, fork, exit, the objects' operations) until it runs work or leaves
//! the CPU, and the next task's program goes on from there.

use crate::governor::UpdateFlags;
use crate::sched::objects::Outcome;
use crate::sched::task::{Mark, Op};
use crate::sched::waker::{WakeContext, Waker};
use crate::sched::{MAX_INSTANT_STEPS, MAX_PROGRAM_NESTING};
use crate::sim::Sim;
use crate::workload::estimates::kernel;

impl Sim {
    /// Interpret the programs `cpu` runs until its task runs work, or it goes idle.
    ///
    /// A task that blocks or exits hands the CPU to the next one, whose program is interpreted
    /// here in turn, without a stack frame per task. Programs
    /// started from deeper within (a wake-up that runs an idle CPU's new task at once, which
    /// wakes another...) nest up to [`MAX_PROGRAM_NESTING`]; beyond, they are deferred to the
    /// end of the event (`run_deferred_programs`).
    pub(crate) fn run_program(&mut self, cpu: usize) {
        let task = self.sched.cpus[cpu].curr.expect("a current task");
        if self.work.program_nesting >= MAX_PROGRAM_NESTING {
            self.work.deferred_programs.push((cpu, task, self.sched.cpus[cpu].seg_token));
            return;
        }
        self.work.program_nesting += 1;
        while self.interpret(cpu) {}
        self.work.program_nesting -= 1;
    }

    /// Programs deferred by [`Sim::run_program`], run at the end of an event, oldest first;
    /// one whose CPU has moved on (its task switched out or started a segment) is dropped:
    /// the task's program resumes when it runs again.
    pub(crate) fn run_deferred_programs(&mut self) {
        let mut next = 0;
        while next < self.work.deferred_programs.len() {
            let (cpu, task, token) = self.work.deferred_programs[next];
            next += 1;
            if self.sched.cpus[cpu].curr == Some(task) && self.sched.cpus[cpu].seg_token == token {
                self.run_program(cpu);
            }
        }
        self.work.deferred_programs.clear();
    }

    /// Interpret the current task's program until it runs work, blocks or exits. Operations
    /// that wake other tasks may preempt this one; it then stops here and resumes at its next
    /// operation when it runs again. Returns whether `cpu` switched to another task whose
    /// program is to be interpreted now.
    pub(crate) fn interpret(&mut self, cpu: usize) -> bool {
        let task = self.sched.cpus[cpu].curr.expect("a current task");
        let mut read = self.sched.tasks[task].ops_read;
        for _ in 0..MAX_INSTANT_STEPS {
            // After a failure (a fork past the task limit) the run stops at the end of this
            // event: the programs it would still interpret here are left where they are.
            if self.sched.cpus[cpu].curr != Some(task) || self.run.failure.is_some() {
                return false;
            }
            // An operation that woke another task may have switched the CPU away and back to
            // this one, whose program a nested call then took on (a vfork child preempted by
            // its released parent, picked again when the parent sleeps in wait4): it went on
            // from there, and goes on no further from here.
            if self.sched.tasks[task].ops_read != read {
                return false;
            }
            let now = self.q.now();
            if self.sched.cpus[cpu].remote_resched_at.is_some_and(|at| now >= at) {
                // A reschedule from another CPU whose IPI is due (the task stopped for it, or
                // its run ended with the IPI's arrival): `resched_ipi`.
                self.resched_ipi(cpu);
                return false;
            }
            if self.sched.cpus[cpu].ipi_send_until > now {
                // Still sending an IPI to a halted vCPU: an empty segment ends with the send.
                self.start_segment(cpu);
                return false;
            }
            let t = &mut self.sched.tasks[task];
            t.ops_read += 1;
            read = t.ops_read;
            // The program is shared (a count, not a copy), so the operation is read in place.
            let program = std::rc::Rc::clone(&t.program);
            let pc = t.pc;
            t.pc += 1;
            match program[pc] {
                Op::Run { cycles, mem_frac } => {
                    let w = self.draw(task, cycles);
                    let crossing = std::mem::take(&mut self.sched.tasks[task].crossing_cycles);
                    if w + crossing > 0.0 {
                        let w = self.jittered(task, w) + crossing;
                        self.give_work(task, w, mem_frac);
                        self.start_segment(cpu);
                        return false;
                    }
                }
                Op::RunFor { ns } => {
                    let w = self.draw(task, ns).round();
                    if w > 0.0 {
                        let t = &mut self.sched.tasks[task];
                        t.work_left = w;
                        t.fixed_time = true;
                        self.start_segment(cpu);
                        return false;
                    }
                }
                Op::Mark(mark) => self.mark(task, mark),
                Op::Jump { to } => self.sched.tasks[task].pc = to,
                Op::Repeat { to, times } => {
                    let here = self.sched.tasks[task].pc - 1;
                    let t = &mut self.sched.tasks[task];
                    let left = match t.loops.last_mut() {
                        Some((pc, left)) if *pc == here => left,
                        _ => {
                            t.loops.push((here, times));
                            &mut t.loops.last_mut().expect("just pushed").1
                        }
                    };
                    *left -= 1;
                    if *left > 0 {
                        t.pc = to;
                    } else {
                        t.loops.pop();
                    }
                }
                Op::Sleep { ns } => {
                    // A float beyond u64 saturates: such a sleep outlasts any run.
                    let d = self.draw(task, ns).max(0.0) as u64;
                    return self.block_and_switch(cpu, Some(now.saturating_add(d)));
                }
                Op::WaitPeriod { period_ns } => {
                    let t = &mut self.sched.tasks[task];
                    let periods = (now - t.start_ns) / period_ns + 1;
                    let next = t.start_ns.saturating_add(periods.saturating_mul(period_ns));
                    t.activation_ns = next;
                    return self.block_and_switch(cpu, Some(next));
                }
                Op::Timer { period_ns, mode } => {
                    // rt-app's timer event (src/rt-app.c, run_event, `case rtapp_timer`): sleep
                    // only while the next release is ahead; a late task goes on at once.
                    let t = &mut self.sched.tasks[task];
                    let (release, sleep) = mode.next_release(t.activation_ns, period_ns, now);
                    t.activation_ns = release;
                    t.timer_reached_ns = now;
                    if sleep {
                        return self.block_and_switch(cpu, Some(release));
                    }
                }
                Op::Post { ch, sync } => {
                    let ch = ch + self.sched.tasks[task].attrs.channel_base;
                    self.channel_post(ch, Waker::Task { cpu, sync })
                }
                Op::PostRelease { ch, sync } => {
                    let ch = ch + self.sched.tasks[task].attrs.channel_base;
                    let release = self.sched.tasks[task].activation_ns;
                    self.channel_post_release(ch, release, Waker::Task { cpu, sync })
                }
                Op::Loopback { ch, sync } => {
                    let ch = ch + self.sched.tasks[task].attrs.channel_base;
                    self.loopback_post(ch, cpu, sync)
                }
                Op::TcpSend { ch, bytes } => {
                    let ch = ch + self.sched.tasks[task].attrs.channel_base;
                    self.tcp_send(ch, bytes, task, cpu)
                }
                Op::TcpAck { ch, call_bytes } => {
                    let ch = ch + self.sched.tasks[task].attrs.channel_base;
                    self.tcp_ack(ch, call_bytes, cpu)
                }
                Op::Offer { ch, capacity } => {
                    let ch = ch + self.sched.tasks[task].attrs.channel_base;
                    self.channel_offer(ch, capacity, cpu)
                }
                Op::Wait { ch } => {
                    let ch = ch + self.sched.tasks[task].attrs.channel_base;
                    if let Outcome::Sleep = self.channel_wait(ch, task) {
                        return self.block_and_switch(cpu, None);
                    }
                }
                Op::Poll { ch, empty } => {
                    let ch = ch + self.sched.tasks[task].attrs.channel_base;
                    if !self.channel_poll(ch) {
                        self.sched.tasks[task].pc = empty;
                    }
                }
                Op::PipeWrite { pipe, bytes, crossing } => {
                    let pipe = pipe + self.sched.tasks[task].attrs.channel_base;
                    if let Outcome::Sleep = self.pipe_write(pipe, bytes, crossing, task, cpu) {
                        return self.block_and_switch(cpu, None);
                    }
                }
                Op::PipeRead { pipe, crossing } => {
                    let pipe = pipe + self.sched.tasks[task].attrs.channel_base;
                    if let Outcome::Sleep = self.pipe_read(pipe, crossing, task, cpu) {
                        return self.block_and_switch(cpu, None);
                    }
                }
                Op::UnixSend { sock, truesize, crossing } => {
                    let sock = sock + self.sched.tasks[task].attrs.channel_base;
                    if let Outcome::Sleep = self.unix_send(sock, truesize, crossing, task, cpu) {
                        return self.block_and_switch(cpu, None);
                    }
                }
                Op::UnixRecv { sock, truesize, crossing } => {
                    let sock = sock + self.sched.tasks[task].attrs.channel_base;
                    if let Outcome::Sleep = self.unix_recv(sock, truesize, crossing, task, cpu) {
                        return self.block_and_switch(cpu, None);
                    }
                }
                Op::WaitUninterruptible { ch } => {
                    let ch = ch + self.sched.tasks[task].attrs.channel_base;
                    if let Outcome::Sleep = self.channel_wait(ch, task) {
                        return self.sleep_uninterruptible(cpu);
                    }
                }
                Op::Ask { ch, answer, sync } => {
                    let base = self.sched.tasks[task].attrs.channel_base;
                    self.channel_ask(ch + base, answer + base, cpu, sync)
                }
                Op::Take { ch } => {
                    let ch = ch + self.sched.tasks[task].attrs.channel_base;
                    if let Outcome::Sleep = self.channel_take(ch, task) {
                        return self.block_and_switch(cpu, None);
                    }
                }
                Op::Answer { sync } => {
                    // A program answers only after it took a token: the workload's contract.
                    let ch = self.sched.tasks[task].answer_to.expect("Op::Answer before any Op::Take");
                    self.channel_post(ch, Waker::Task { cpu, sync })
                }
                Op::Barrier { id, n } => {
                    if let Outcome::Sleep = self.barrier_arrive(id, n, task, cpu) {
                        return self.block_and_switch(cpu, None);
                    }
                }
                Op::Lock { id } => {
                    if let Outcome::Sleep = self.mutex_lock(id, task) {
                        return self.block_and_switch(cpu, None);
                    }
                }
                Op::Unlock { id } => self.mutex_unlock(id, cpu),
                Op::Io { dev, service_ns, transfer_ns } => {
                    let service = self.draw(task, service_ns).max(0.0) as u64;
                    let transfer = self.draw(task, transfer_ns).max(0.0) as u64;
                    self.io_submit(dev, task, service, transfer);
                    // The task waits on the device uninterruptibly (io_schedule: state D).
                    return self.sleep_uninterruptible(cpu);
                }
                Op::IoFlush { dev, service_ns, .. } if self.commit_in_flight(dev) => {
                    let service = self.draw(task, service_ns).max(0.0) as u64;
                    self.io_submit(dev, task, service, 0);
                    return self.sleep_uninterruptible(cpu);
                }
                Op::IoPlugged { dev, service_ns, dispatch_cycles }
                | Op::IoFlush { dev, service_ns, dispatch_cycles } => {
                    let service = self.draw(task, service_ns).max(0.0) as u64;
                    self.io_submit_plugged(dev, task, cpu, service, dispatch_cycles);
                    // The task is off the CPU before its worker runs: the plug's flush is the
                    // first step of its sleep.
                    self.put_to_sleep(cpu, None);
                    if let Some((_, state)) = self.sched.cpus[cpu].switched_out.as_mut() {
                        *state = 'D';
                    }
                    self.kick_kblockd(cpu);
                    // A worker woken on the emptied CPU is running already.
                    if self.sched.cpus[cpu].curr.is_some() {
                        return false;
                    }
                    return self.switch_next(cpu);
                }
                Op::WaitPlugged => {
                    if let Outcome::Sleep = self.kblockd_wait(task, cpu) {
                        return self.block_and_switch(cpu, None);
                    }
                }
                Op::RunPlugged => {
                    let w = self.plugged_dispatch_work(cpu);
                    if w > 0.0 {
                        self.give_work(task, w, 0.0);
                        self.start_segment(cpu);
                        return false;
                    }
                }
                Op::RunHwQueue => self.run_hw_queue(cpu),
                Op::IoWriteback { dev, service_ns } => {
                    let service = self.draw(task, service_ns).max(0.0) as u64;
                    self.io_submit_writeback(dev, cpu, service);
                }
                Op::WaitEndIoWork => {
                    if let Outcome::Sleep = self.end_io_wait(task) {
                        return self.block_and_switch(cpu, None);
                    }
                }
                Op::WaitSoftirq => {
                    if let Outcome::Sleep = self.softirq_wait(cpu) {
                        return self.block_and_switch(cpu, None);
                    }
                }
                Op::WaitGp => {
                    if let Some(timeout) = self.rcu_wait() {
                        return self.block_and_switch(cpu, timeout);
                    }
                }
                Op::GpWork => self.rcu_gp_work(cpu),
                Op::IoEndWork { dev, service_ns } => {
                    let service = self.draw(task, service_ns).max(0.0) as u64;
                    if self.work.objects.end_io.present {
                        self.io_submit_end_work(dev, task, service);
                    } else {
                        self.io_submit(dev, task, service, 0);
                    }
                    return self.sleep_uninterruptible(cpu);
                }
                Op::EndIo => self.end_io(cpu),
                Op::Spawn { program, count } => {
                    for _ in 0..count {
                        let id = self.sched.tasks.len();
                        if self.sched.live_tasks >= crate::sched::task::MAX_TASKS {
                            self.refuse_fork(task);
                            break;
                        }
                        let prog = self.work.programs[program as usize].clone();
                        let mut child =
                            self.sched.new_task(&self.machine, id, self.sched.child_name(task, id), prog, now);
                        child.parent = Some(task);
                        child.root = self.sched.tasks[task].root;
                        // fork copies the parent's allowed CPUs (dup_task_struct).
                        child.attrs.affinity = self.sched.tasks[task].attrs.affinity.clone();
                        // ... and its task group (sched_fork's task group of the parent).
                        child.attrs.group = self.sched.tasks[task].attrs.group;
                        // ... and its policy and nice value, so its weight (sched_fork keeps
                        // them unless the parent asked SCHED_RESET_ON_FORK, which no model does).
                        child.attrs.policy = self.sched.tasks[task].attrs.policy;
                        child.attrs.nice = self.sched.tasks[task].attrs.nice;
                        child.cpu = cpu;
                        self.sched.tasks.push(child);
                        if let Some(tl) = self.run.timeline(&mut self.sched.charges) {
                            tl.process(now, cpu, 'F', task, Some(id));
                        }
                        self.sched.tasks[task].live_children += 1;
                        self.sched.live_tasks += 1;
                        self.start_task(id);
                    }
                }
                Op::WaitChildren => {
                    if self.sched.tasks[task].live_children > 0 {
                        self.sched.tasks[task].waiting_children = true;
                        return self.block_and_switch(cpu, None);
                    }
                }
                Op::Exec { comm } => {
                    self.sched.tasks[task].name = comm.to_string();
                    self.rcu_callback_queued(false);
                    if let Some(tl) = self.run.timeline(&mut self.sched.charges) {
                        tl.process(now, cpu, 'E', task, None);
                    }
                    // A new image has the smallest cache footprint a task will ever have: exec
                    // balancing walks the domains (find_idlest_cpu with SD_BALANCE_EXEC).
                    // Moving to a busy CPU is left out: the model has no way to push a
                    // running task into another CPU's queue.
                    // A guest kernel's vCPU packing keeps it where it has room (`sim/vcpu_pack.rs`).
                    let dest = match self.packed_new_task_cpu(task, cpu, true) {
                        Some(stay) => stay,
                        None => self.sched.select_exec_cpu(&self.machine, &self.q, task, cpu),
                    };
                    // The C library's CPUIDs at the start of the new image wait on the host,
                    // wherever sched_exec puts the task: work that takes its time whatever the
                    // vCPU's clock (all memory-bound), and preemptible between the exits.
                    let startup_cycles = self.exec_startup_ns() * self.base_cycles_per_ns(cpu);
                    if startup_cycles > 0.0 {
                        self.give_work(task, startup_cycles, 1.0);
                    }
                    if dest != cpu && self.sched.cpus[dest].curr.is_none() {
                        // sched_exec moves it from its own CPU (migration_cpu_stop there).
                        self.note_migration(task, (cpu, dest), "exec", (cpu, WakeContext::Task));
                        self.migrate_running(cpu, dest);
                        return false;
                    }
                    if startup_cycles > 0.0 {
                        self.start_segment(cpu);
                        return false;
                    }
                }
                Op::Yield => {
                    if !self.sched.cpus[cpu].queue.is_empty() {
                        if self.sched.eevdf.is_none() || self.sched.rt_prio(task).is_some() {
                            self.preempt(cpu, None);
                            return false;
                        }
                        // EEVDF: the yielding task competes in the pick, and may win it.
                        self.sched.fair_yield(&self.q, cpu);
                        if let Some(next) = self.sched.fair_repick(&self.q, cpu) {
                            self.preempt(cpu, Some(next));
                            return false;
                        }
                    }
                }
                Op::Setsid => {
                    if self.sched.groups {
                        self.sched.move_to_new_group(&self.q, cpu, task);
                        // sched_move_task's resched_curr: the fair class's pick, the task
                        // competing (a real-time task keeps its CPU).
                        let fair = self.sched.rt_prio(task).is_none();
                        if let Some(next) = fair.then(|| self.sched.fair_repick(&self.q, cpu)).flatten() {
                            self.preempt(cpu, Some(next));
                            return false;
                        }
                    }
                }
                Op::SetAffinity { ref cpus } => {
                    self.sched.tasks[task].attrs.affinity = cpus.clone();
                    if !self.sched.allowed(task, cpu) {
                        // Off this CPU now: requeue through wake-up placement.
                        self.sleep_curr(cpu, None);
                        self.wake_task(task, Waker::Requeue, UpdateFlags::default());
                        return false;
                    }
                }
                Op::SetUclamp { min, max } => {
                    self.sched.uclamp_requested(min, max);
                    let a = &mut self.sched.tasks[task].attrs;
                    a.uclamp_min = min;
                    a.uclamp_max = max;
                }
                Op::Continue(ref next) => {
                    let t = &mut self.sched.tasks[task];
                    t.program = next.load();
                    t.pc = 0;
                }
                Op::Exit => {
                    if !self.sched.tasks[task].attrs.background {
                        self.rcu_callback_queued(true);
                    }
                    self.exit_notify(cpu);
                    return self.exit_and_switch(cpu);
                }
            }
            // Back at user mode from a system call, the task finds the need_resched flag that
            // another CPU's wake-up set on it (exit_to_user_mode_loop): it goes no further,
            // and on the guest the switch comes when that CPU's IPI does (a task making
            // system calls stops at its first return and is switched out with the IPI:
            // docs/recording.md). A kernel thread never returns to user mode.
            let c = &mut self.sched.cpus[cpu];
            if let Some(at) = c.remote_resched_at.filter(|_| {
                c.curr == Some(task) && returns_to_user(&program[pc]) && !self.sched.tasks[task].attrs.background
            }) {
                c.halt_until = c.halt_until.max(at);
                self.start_segment(cpu);
                return false;
            }
        }
        // A program that loops without running or sleeping would hang the simulation.
        self.exit_notify(cpu);
        self.exit_and_switch(cpu)
    }

    /// Put `cpu`'s current task to sleep in state D (TASK_UNINTERRUPTIBLE, as the trace's
    /// `prev_state` shows it) and switch to what runs next. Returns whether the next task's
    /// program is to run now.
    pub(crate) fn sleep_uninterruptible(&mut self, cpu: usize) -> bool {
        self.put_to_sleep(cpu, None);
        if let Some((_, state)) = self.sched.cpus[cpu].switched_out.as_mut() {
            *state = 'D';
        }
        self.switch_next(cpu)
    }

    /// Hand `task` `cycles` of work of memory-stall share `mem_frac` to run next (its segment
    /// starts where it runs: `start_segment`, or its switch-in).
    fn give_work(&mut self, task: usize, cycles: f64, mem_frac: f64) {
        let t = &mut self.sched.tasks[task];
        t.work_left = cycles;
        t.work_submitted += cycles;
        t.mem_frac = mem_frac;
        t.fixed_time = false;
    }

    /// How long an exec'd program's C library start-up waits on the host for its CPUIDs
    /// (ns): none on bare metal.
    fn exec_startup_ns(&self) -> f64 {
        self.machine.plat.file.vm_exits.map_or(0.0, |v| kernel::EXEC_STARTUP_CPUIDS * v.cpuid_us * 1e3)
    }

    /// Cycles at `cpu`'s base clock per ns: what memory-bound work (`mem_frac` 1) does in a
    /// nanosecond whatever the clock runs at (`core_rate`, its SMT share apart).
    fn base_cycles_per_ns(&self, cpu: usize) -> f64 {
        let cl = self.machine.plat.cluster(self.machine.plat.cpus[cpu].cluster);
        cl.capacity_dmips_mhz as f64 / 1024.0 * cl.frequency.base_khz as f64 * 1e-6
    }

    /// An amount for `task`'s operation: background kernel threads draw from their own
    /// stream.
    pub(crate) fn draw(&mut self, task: usize, amount: crate::sched::task::Amount) -> f64 {
        let rng =
            if self.sched.tasks[task].attrs.background { &mut self.work.background_rng } else { &mut self.work.rng };
        amount.draw(rng)
    }

    /// Work `w` of a run segment of `task` with the workload's work jitter (`work_jitter_pct`):
    /// times a factor uniform in `[1 - j, 1 + j]`, of mean 1. Background kernel threads are
    /// the machine's, not the workload's, and keep their work.
    pub(crate) fn jittered(&mut self, task: usize, w: f64) -> f64 {
        use rand::Rng;
        let j = self.work.work_jitter;
        if j > 0.0 && !self.sched.tasks[task].attrs.background {
            w * self.work.variation_rng.gen_range(1.0 - j..=1.0 + j)
        } else {
            w
        }
    }

    /// Record a progress mark for the workload's metric.
    pub(crate) fn mark(&mut self, task: usize, mark: Mark) {
        let now = self.q.now();
        match mark {
            Mark::Add { counter, amount } => {
                let n = counter as usize;
                if self.work.stats.counters.len() <= n {
                    self.work.stats.counters.resize(n + 1, 0);
                }
                self.work.stats.counters[n] += amount;
            }
            Mark::ActivationDone => self.work.stats.responses_ns.push(now - self.sched.tasks[task].activation_ns),
            Mark::TimerWakeUp => {
                // A release already past when the timer was reached is no wake-up: latency 0.
                let t = &self.sched.tasks[task];
                self.work.stats.responses_ns.push(now - t.activation_ns.max(t.timer_reached_ns));
            }
            Mark::SinceRelease(slot) => {
                let since = now - self.sched.tasks[task].activation_ns;
                let lat = &mut self.work.stats.latencies_ns;
                if lat.len() <= slot as usize {
                    lat.resize_with(slot as usize + 1, Vec::new);
                }
                lat[slot as usize].push(since);
            }
            Mark::Start(slot) => {
                let marks = &mut self.sched.tasks[task].marks;
                match marks.iter_mut().find(|(s, _)| *s == slot) {
                    Some(open) => open.1 = now,
                    None => marks.push((slot, now)),
                }
            }
            Mark::End(slot) => {
                let marks = &mut self.sched.tasks[task].marks;
                let start = match marks.iter().position(|(s, _)| *s == slot) {
                    Some(k) => marks.swap_remove(k).1,
                    None => now,
                };
                let lat = &mut self.work.stats.latencies_ns;
                if lat.len() <= slot as usize {
                    lat.resize_with(slot as usize + 1, Vec::new);
                }
                lat[slot as usize].push(now - start);
            }
        }
    }

    /// A fork past [`crate::sched::task::MAX_TASKS`]: the run stops at the end of this event with an
    /// error that says who forked. The task goes on as if the fork had failed.
    pub(crate) fn refuse_fork(&mut self, task: usize) {
        if self.run.failure.is_some() {
            return;
        }
        let name = &self.sched.tasks[task].name;
        let root = &self.sched.tasks[self.sched.tasks[task].root].name;
        self.run.failure = Some(crate::error::SimError::config(
            format!("workload '{}'", self.work.workload_name),
            "tasks",
            format!(
                "task '{name}' (of '{root}') forked past the limit of {} tasks a run may have alive at once, at {:.3} ms \
                 simulated: does a task fork without end?",
                crate::sched::task::MAX_TASKS,
                self.q.now() as f64 * 1e-6
            ),
        ));
    }
}

/// Whether `op`, done without sleeping, is a system call that then returns to user mode. A
/// loopback send returns after the work that follows it (`loopback::TCP_WAKE_TAIL_CYCLES`),
/// and the I/O operations and the kernel threads' own steps are the kernel's.
fn returns_to_user(op: &Op) -> bool {
    matches!(
        op,
        Op::Post { .. }
            | Op::PostRelease { .. }
            | Op::TcpSend { .. }
            | Op::TcpAck { .. }
            | Op::Offer { .. }
            | Op::Wait { .. }
            | Op::Poll { .. }
            | Op::PipeWrite { .. }
            | Op::PipeRead { .. }
            | Op::UnixSend { .. }
            | Op::UnixRecv { .. }
            | Op::WaitUninterruptible { .. }
            | Op::Ask { .. }
            | Op::Take { .. }
            | Op::Answer { .. }
            | Op::Barrier { .. }
            | Op::Lock { .. }
            | Op::Unlock { .. }
            | Op::Spawn { .. }
            | Op::WaitChildren
            | Op::Exec { .. }
            | Op::Yield
            | Op::Setsid
            | Op::SetAffinity { .. }
            | Op::SetUclamp { .. }
            | Op::Timer { .. }
    )
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use crate::sched::task::Op;
    use crate::sim::test_support::{run, run_on_kvm_guest, Tasks};
    use crate::sim::SimConfig;
    use crate::workload::estimates::kernel;
    use crate::workload::TaskSpec;

    const BEFORE: f64 = 100_000.0;
    const AFTER: [f64; 2] = [1_000_000.0, 500_000.0];

    /// A parent on one CPU vforks a child that releases it, is preempted by it, and runs on
    /// once the parent sleeps again in wait4: the child's work after the release is
    /// [`AFTER`] split in two runs. The other CPU runs a hog.
    fn vfork() -> Tasks {
        let parent: Rc<[Op]> = vec![
            run(10_000.0),
            Op::Spawn { program: 0, count: 1 },
            // kernel_clone's tail after the child is queued: the parent sleeps just behind
            // it, so the release finds the child the one past its share.
            run(4_000.0),
            Op::WaitUninterruptible { ch: 0 },
            Op::WaitChildren,
            Op::Exit,
        ]
        .into();
        // A hog keeps the other CPU busy, so the child is queued with its parent.
        let hog: Rc<[Op]> = vec![run(1e9), Op::Jump { to: 0 }].into();
        let child: Rc<[Op]> = vec![
            run(BEFORE),
            Op::Post { ch: 0, sync: false },
            Op::Exec { comm: "child" },
            run(AFTER[0]),
            run(AFTER[1]),
            Op::Exit,
        ]
        .into();
        Tasks {
            tasks: vec![TaskSpec::new("parent", parent).pinned(vec![0]), TaskSpec::new("hog", hog).pinned(vec![1])],
            programs: vec![child],
            devices: vec![],
        }
    }

    /// On CPU 0 a task runs 1.5 ms, makes a system call (a post no one waits for), runs 10 µs
    /// more and sleeps; another task sleeps there from the start. CPU 1 wakes the sleeper
    /// `lead_us` before that call. The running task's first switch-out after the wake-up: µs
    /// after it, and its state.
    fn remote_preemption(lead_us: f64) -> (f64, char) {
        let ghz = 2.6e3;
        let runner: Rc<[Op]> =
            vec![run(1_500.0 * ghz), Op::Post { ch: 1, sync: false }, run(10.0 * ghz), Op::Wait { ch: 2 }, Op::Exit]
                .into();
        let sleeper: Rc<[Op]> = vec![Op::Wait { ch: 0 }, run(100.0 * ghz), Op::Exit].into();
        let waker: Rc<[Op]> = vec![run((1_500.0 - lead_us) * ghz), Op::Post { ch: 0, sync: false }, Op::Exit].into();
        let tasks = Tasks {
            tasks: vec![
                TaskSpec::new("sleeper", sleeper).pinned(vec![0]),
                TaskSpec::new("runner", runner).pinned(vec![0]),
                TaskSpec::new("waker", waker).pinned(vec![1]),
            ],
            programs: vec![],
            devices: vec![],
        };
        let cfg = SimConfig::new("performance:kernel=6.18", "test").duration_ns(Some(3_000_000)).timeline(true);
        let mut sim = run_on_kvm_guest(&cfg, tasks);
        let runner = sim.sched.tasks.iter().position(|t| t.name == "runner").unwrap() as i64;
        let sleeper = sim.sched.tasks.iter().position(|t| t.name == "sleeper").unwrap() as u32;
        let tl = sim.run.timeline.take().unwrap();
        let woke = (0..tl.waking_task.len()).find(|&i| tl.waking_task[i] == sleeper && tl.waking_cpu[i] == 1).unwrap();
        let woke_ns = tl.waking_time_ns[woke];
        let out = (0..tl.switch_prev.len())
            .find(|&i| tl.switch_prev[i] == runner && tl.switch_time_ns[i] >= woke_ns)
            .expect("the runner switched out");
        ((tl.switch_time_ns[out] - woke_ns) as f64 / 1e3, tl.switch_prev_state[out])
    }

    #[test]
    fn a_task_preempted_from_another_cpu_stops_at_its_next_return_to_user_mode() {
        // A wake-up from CPU 1 lets the sleeper preempt CPU 0's running task: it sets the
        // task's need_resched flag at once, and sends an IPI that reaches the guest's running
        // vCPU 25 µs later (`vcpu_wake.resched_us`). The task's system call 5 µs after the
        // wake-up returns to user mode with the flag set (exit_to_user_mode_loop): it goes no
        // further, and is switched out runnable when the IPI comes, where it would otherwise
        // have run on and slept first.
        let (after_us, state) = remote_preemption(5.0);
        assert!((after_us - 25.0).abs() < 1.0 && state == 'R', "{state} {after_us} µs after the wake-up");
        // A call 40 µs after the wake-up comes too late: the IPI switches it out first.
        let (after_us, state) = remote_preemption(40.0);
        assert!((after_us - 25.0).abs() < 1.0 && state == 'R', "{state} {after_us} µs after the wake-up");
    }

    #[test]
    fn a_task_switched_back_in_within_its_own_operation_loses_no_work() {
        // The child's release wakes its parent, which preempts it (the vfork's wake-up); the
        // parent sleeps again at once in wait4 and the child, picked again inside that same
        // operation, goes on with its next run. Its program must resume there once, not a
        // second time from the operation that woke the parent (which would replace the run
        // just started with the one after it).
        let cfg = SimConfig::new("performance:kernel=6.18", "test").duration_ns(Some(10_000_000));
        let sim = run_on_kvm_guest(&cfg, vfork());
        let child = sim.sched.tasks.iter().find(|t| t.name == "child").expect("the child ran");
        // Its exec's CPUID exits on this guest are work too, at the guest's 2.6 GHz.
        let all = BEFORE + AFTER[0] + AFTER[1] + kernel::RECORDED_STARTUP_CYCLES;
        assert!((child.work_done - all).abs() < 1.0, "{} of {all} cycles", child.work_done);
    }
}
