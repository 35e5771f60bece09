//! The workload's objects in a run: channels, barriers, mutexes and I/O submissions and
//! completions, which wake tasks through the scheduler's sequences.

use crate::engine::{Event, IoRequest, TimeNs};
use crate::governor::UpdateFlags;
use crate::sched::objects::{completion_cpu, slot, IoWaiter, Outcome};
use crate::sched::waker::Waker;
use crate::sim::Sim;
use crate::workload::{Completion, Service};

impl Sim {
    /// `Op::Post` and `Op::Loopback`: hand a token to the first waiter (`waker` waking it) or
    /// keep it.
    pub(crate) fn channel_post(&mut self, ch: u32, waker: Waker) {
        let c = slot(&mut self.work.objects.channels, ch);
        match c.waiters.pop_front() {
            Some(task) => self.wake_task(task, waker, UpdateFlags::default()),
            None => c.tokens += 1,
        }
    }

    /// `Op::PostRelease`: `channel_post` of a token carrying `release`, which the task that
    /// takes it adopts as its own last release.
    pub(crate) fn channel_post_release(&mut self, ch: u32, release: TimeNs, waker: Waker) {
        let c = slot(&mut self.work.objects.channels, ch);
        match c.waiters.pop_front() {
            Some(task) => {
                self.sched.tasks[task].activation_ns = release;
                self.wake_task(task, waker, UpdateFlags::default())
            }
            None => {
                c.tokens += 1;
                c.releases.push_back(release);
            }
        }
    }

    /// `Op::Loopback`: `channel_post` from the NET_RX softirq that a loopback send raised on
    /// `cpu`, interrupting the sender, whose receive wakes the waiter from there.
    pub(crate) fn loopback_post(&mut self, ch: u32, cpu: usize, sync: bool) {
        self.sched.cpus[cpu].in_loopback_send = true;
        self.channel_post(ch, Waker::Softirq { cpu: Some(cpu), sync });
        self.sched.cpus[cpu].in_loopback_send = false;
    }

    /// `Op::Offer`: like `channel_post` from the poster's softirq with `sync` (a datagram's
    /// loopback receive), but a token that finds `capacity` others queued is dropped.
    pub(crate) fn channel_offer(&mut self, ch: u32, capacity: u32, waker_cpu: usize) {
        let c = slot(&mut self.work.objects.channels, ch);
        match c.waiters.pop_front() {
            Some(task) => {
                let waker = Waker::Softirq { cpu: Some(waker_cpu), sync: true };
                self.wake_task(task, waker, UpdateFlags::default())
            }
            None if c.tokens < capacity as u64 => c.tokens += 1,
            None => {}
        }
    }

    /// `Op::Wait`: take a token, or queue up and sleep.
    pub(crate) fn channel_wait(&mut self, ch: u32, task: usize) -> Outcome {
        let c = slot(&mut self.work.objects.channels, ch);
        if c.tokens > 0 {
            c.tokens -= 1;
            if let Some(release) = c.releases.pop_front() {
                self.sched.tasks[task].activation_ns = release;
            }
            Outcome::Continue
        } else {
            c.waiters.push_back(task);
            Outcome::Sleep
        }
    }

    /// `Op::Poll`: take a token if one is queued; whether one was.
    pub(crate) fn channel_poll(&mut self, ch: u32) -> bool {
        let c = slot(&mut self.work.objects.channels, ch);
        let queued = c.tokens > 0;
        if queued {
            c.tokens -= 1;
        }
        queued
    }

    /// `Op::Ask`: hand a token carrying the return address `answer` to the first waiter
    /// (waking it with the address) or keep both.
    pub(crate) fn channel_ask(&mut self, ch: u32, answer: u32, waker_cpu: usize, sync: bool) {
        let c = slot(&mut self.work.objects.channels, ch);
        match c.waiters.pop_front() {
            Some(task) => {
                self.sched.tasks[task].answer_to = Some(answer);
                self.wake_task(task, Waker::Task { cpu: waker_cpu, sync }, UpdateFlags::default());
            }
            None => {
                c.tokens += 1;
                c.answers.push_back(answer);
            }
        }
    }

    /// `Op::Take`: take a token and its return address, or queue up and sleep (the asker
    /// hands the address over with the wake-up).
    pub(crate) fn channel_take(&mut self, ch: u32, task: usize) -> Outcome {
        let c = slot(&mut self.work.objects.channels, ch);
        if c.tokens > 0 {
            c.tokens -= 1;
            self.sched.tasks[task].answer_to = c.answers.pop_front();
            debug_assert!(self.sched.tasks[task].answer_to.is_some(), "a token without a return address");
            Outcome::Continue
        } else {
            c.waiters.push_back(task);
            Outcome::Sleep
        }
    }

    /// `task` sleeps on an object (a pipe, a socket) and, when it runs again, does the
    /// operation that found no room or nothing to read once more, as the kernel's loops do
    /// after their waits.
    pub(crate) fn sleep_to_repeat(&mut self, task: usize) -> Outcome {
        self.sched.tasks[task].pc -= 1;
        Outcome::Sleep
    }

    /// Wake `tasks`, taken off an object's wait queue, from `cpu` with a sync wake-up (the
    /// pipes' and sockets' `wake_up_interruptible_sync_poll`).
    pub(crate) fn wake_sync(&mut self, tasks: Vec<usize>, cpu: usize) {
        for task in tasks {
            self.wake_task(task, Waker::Task { cpu, sync: true }, UpdateFlags::default());
        }
    }

    /// `Op::Barrier`: the n-th arrival releases everyone who waited.
    pub(crate) fn barrier_arrive(&mut self, id: u32, n: u32, task: usize, cpu: usize) -> Outcome {
        let b = slot(&mut self.work.objects.barriers, id);
        if b.arrived.len() + 1 < n as usize {
            b.arrived.push(task);
            return Outcome::Sleep;
        }
        let released = std::mem::take(&mut b.arrived);
        for t in released {
            self.wake_task(t, Waker::Task { cpu, sync: false }, UpdateFlags::default());
        }
        Outcome::Continue
    }

    pub(crate) fn mutex_lock(&mut self, id: u32, task: usize) -> Outcome {
        let m = slot(&mut self.work.objects.mutexes, id);
        match m.owner {
            None => {
                m.owner = Some(task);
                Outcome::Continue
            }
            Some(_) => {
                m.waiters.push_back(task);
                Outcome::Sleep
            }
        }
    }

    /// Release a mutex: ownership passes straight to the first waiter, which is woken.
    pub(crate) fn mutex_unlock(&mut self, id: u32, cpu: usize) {
        let m = slot(&mut self.work.objects.mutexes, id);
        m.owner = m.waiters.pop_front();
        if let Some(next) = m.owner {
            self.wake_task(next, Waker::Task { cpu, sync: false }, UpdateFlags::default());
        }
    }

    /// `Op::Io`: start service at once if the device has a free slot, else queue.
    pub(crate) fn io_submit(&mut self, dev: u32, task: usize, service_ns: u64, transfer_ns: u64) {
        let (service, starts) = self.io_enqueue(dev, IoRequest::Task(task as u32), service_ns, transfer_ns);
        // A queued request's submitter sleeps on the device at once; a group commit's leader
        // once its commit starts (joiners wait for the commit, not on the device).
        if service == Service::Queued || (starts && service == (Service::GroupCommit { leader_iowait: true })) {
            self.sched.iowait_sleep(&self.q, task, true);
        }
    }

    /// `Op::IoPlugged` on `cpu`: the request stays in the task's plug until the task sleeps,
    /// whose flush from the scheduler ([`Sim::kick_kblockd`]) (`sched_submit_work` → `blk_flush_plug`) runs the
    /// hardware queue asynchronously (`blk_mq_run_hw_queue` with `async`): it queues the
    /// hardware context's run work on this CPU's high-priority kblockd worker
    /// (`kblockd_mod_delayed_work_on`), which a pending run does not queue twice. The task
    /// sleeps in iowait from here (`io_schedule`).
    pub(crate) fn io_submit_plugged(&mut self, dev: u32, task: usize, cpu: usize, service_ns: u64, dispatch: f64) {
        let d = &mut self.work.objects.devices[dev as usize];
        d.plugged.push((cpu, task, service_ns, dispatch));
        // Not on a device whose commits are waited for outside io_schedule (`Service`).
        if d.spec.service != (Service::GroupCommit { leader_iowait: false }) {
            self.sched.iowait_sleep(&self.q, task, true);
        }
    }

    /// Whether group-commit device `dev` has a commit on it (`Op::IoFlush` joins the next).
    pub(crate) fn commit_in_flight(&self, dev: u32) -> bool {
        let d = &self.work.objects.devices[dev as usize];
        matches!(d.spec.service, Service::GroupCommit { .. }) && d.in_service > 0
    }

    /// The plug's flush as the submitter on `cpu` sleeps: wake the CPU's kblockd worker unless
    /// it is already awake (its pending work is not queued twice).
    pub(crate) fn kick_kblockd(&mut self, cpu: usize) {
        if let Some(worker) = slot(&mut self.work.objects.kblockd_idle, cpu as u32).take() {
            self.wake_task(worker, Waker::Task { cpu, sync: false }, UpdateFlags::default());
        }
    }

    /// `Op::WaitPlugged`: the kblockd worker of `cpu` goes on if a request waits for it, and
    /// sleeps until one does otherwise.
    pub(crate) fn kblockd_wait(&mut self, worker: usize, cpu: usize) -> Outcome {
        let objects = &mut self.work.objects;
        if objects.devices.iter().any(|d| d.plugged.iter().any(|p| p.0 == cpu)) {
            return Outcome::Continue;
        }
        *slot(&mut objects.kblockd_idle, cpu as u32) = Some(worker);
        Outcome::Sleep
    }

    /// `Op::RunPlugged` on `cpu`: the kblockd worker's run before it dispatches, as work
    /// (cycles at 2.6 GHz, the recordings' clock, as time at the CPU's base frequency). The
    /// run depends on the requests (`blk_mq_run_work_fn` → `blk_mq_dispatch_rq_list` maps
    /// each to the driver and, on a KVM guest, kicks the virtqueue): a discard of a large
    /// file is split into several requests and takes the worker longer than a small one.
    pub(crate) fn plugged_dispatch_work(&self, cpu: usize) -> f64 {
        let cycles: f64 =
            self.work.objects.devices.iter().flat_map(|d| &d.plugged).filter(|p| p.0 == cpu).map(|p| p.3).sum();
        crate::workload::kthreads::at_base_frequency(&self.machine.plat, cpu, cycles)
    }

    /// `Op::RunHwQueue` on `cpu`: the kblockd worker dispatches every request plugged on its
    /// CPU (`blk_mq_run_work_fn`), in the order they were plugged; their submitters already
    /// sleep in iowait. A flush that finds a group commit on the device joins the next one
    /// (`Op::IoFlush`), and its submitter waits for that commit, not on the device: out of
    /// iowait until the commit it leads, if any, starts (`io_complete`), as `io_submit` has it.
    pub(crate) fn run_hw_queue(&mut self, cpu: usize) {
        for dev in 0..self.work.objects.devices.len() {
            let plugged = &mut self.work.objects.devices[dev].plugged;
            let mine: Vec<(usize, usize, u64, f64)> = plugged.iter().filter(|p| p.0 == cpu).copied().collect();
            plugged.retain(|p| p.0 != cpu);
            for (_, task, service_ns, _) in mine {
                let (service, starts) = self.io_enqueue(dev as u32, IoRequest::Task(task as u32), service_ns, 0);
                if !starts && service == (Service::GroupCommit { leader_iowait: true }) {
                    self.sched.iowait_sleep(&self.q, task, false);
                }
            }
        }
    }

    /// A request reaches device `dev`: it starts service at once if the device has a free
    /// slot, else queues. Returns the device's service and whether the request started.
    fn io_enqueue(&mut self, dev: u32, request: IoRequest, service_ns: u64, transfer_ns: u64) -> (Service, bool) {
        let d = &mut self.work.objects.devices[dev as usize];
        // One commit at a time carries every request of a group-commit device.
        let service = d.spec.service;
        let group = matches!(service, Service::GroupCommit { .. });
        let slots = if group { 1 } else { d.spec.queue_depth };
        let starts = d.in_service < slots;
        if starts {
            d.in_service += 1;
            if group {
                d.committing.push(request);
            }
            let at = d.completes_at(self.q.now(), service_ns, transfer_ns);
            self.q.push(at, Event::IoComplete { dev, request });
        } else {
            d.queue.push_back((request, service_ns, transfer_ns));
        }
        (service, starts)
    }

    /// `Op::IoEndWork` with ext4's end-I/O worker present: submit as `Op::Io` does, the
    /// request's end left to the worker.
    pub(crate) fn io_submit_end_work(&mut self, dev: u32, task: usize, service_ns: u64) {
        self.work.objects.devices[dev as usize].end_work.push(task);
        self.io_submit(dev, task, service_ns, 0);
    }

    /// `Op::IoWriteback` on `cpu`: a write request the task does not wait for, sent to the
    /// device at once (`filemap_flush` submits as it goes and `ext4_writepages` finishes its
    /// plug itself, not from the scheduler). The request stands in the device's queue for the
    /// CPU it came from, its submitter free to exit meanwhile.
    pub(crate) fn io_submit_writeback(&mut self, dev: u32, cpu: usize, service_ns: u64) {
        self.io_enqueue(dev, IoRequest::Writeback { cpu: cpu as u32 }, service_ns, 0);
    }

    /// A write whose end is ext4's end-I/O worker's completed, in the block softirq `waker`
    /// names: `ext4_end_bio` hands the I/O's end to `ext4_add_complete_io`, which queues the
    /// inode's conversion of its unwritten extents on the `ext4-rsv-conversion` workqueue
    /// (`queue_work`), waking the worker if it sleeps; `waiter` is the task waiting for the
    /// write, if one is. Without the worker (a kernel whose writeback allocates written
    /// extents, `workload::kthreads::end_io_worker`) a writeback's end is the softirq's own.
    fn queue_conversion(&mut self, waiter: Option<IoWaiter>, waker: Waker) {
        let end_io = &mut self.work.objects.end_io;
        if !end_io.present {
            return;
        }
        // A sleeping worker is handed the work with its wake-up; an awake one finds it queued.
        match end_io.idle.take() {
            Some(worker) => {
                end_io.in_hand = waiter;
                self.wake_task(worker, waker, UpdateFlags::default());
            }
            None => end_io.pending.push_back(waiter),
        }
    }

    /// `Op::WaitEndIoWork`: the end-I/O worker takes the oldest queued conversion and goes
    /// on, or sleeps until a completion queues one.
    pub(crate) fn end_io_wait(&mut self, worker: usize) -> Outcome {
        let end_io = &mut self.work.objects.end_io;
        if let Some(waiter) = end_io.pending.pop_front() {
            end_io.in_hand = waiter;
            return Outcome::Continue;
        }
        end_io.idle = Some(worker);
        Outcome::Sleep
    }

    /// A completion of device `dev` for `task`: if the task's write is to be ended by the
    /// end-I/O worker, queue its conversion there (the task sleeps on until `end_io`).
    fn hand_to_worker(&mut self, dev: u32, task: usize, iowait: bool, waker: Waker) -> bool {
        let d = &mut self.work.objects.devices[dev as usize];
        let Some(k) = d.end_work.iter().position(|&t| t == task) else {
            return false;
        };
        d.end_work.swap_remove(k);
        self.queue_conversion(Some((task, iowait)), waker);
        true
    }

    /// `Op::EndIo`: the worker on `cpu` has converted the extents of the write it took and
    /// ends the pages' writeback, waking the task waiting for it from task context.
    pub(crate) fn end_io(&mut self, cpu: usize) {
        let Some((task, iowait)) = self.work.objects.end_io.in_hand.take() else {
            return;
        };
        if iowait {
            self.sched.iowait_sleep(&self.q, task, false);
        }
        self.wake_task(task, Waker::Task { cpu, sync: false }, UpdateFlags { iowait, ..UpdateFlags::default() });
    }

    /// An I/O completed: wake its task with the iowait flag and start the next queued one.
    /// Under group commit the completion is a whole commit's: every task it carried wakes,
    /// and everything that queued meanwhile goes out together in the next commit, which takes
    /// the service time of its oldest request. At most the commit's leader, the task whose
    /// request it served, slept on the device (io_schedule: iowait); the others waited for the
    /// commit to be done, as PostgreSQL's backends wait on WALWriteLock, and wake without the
    /// flag (`Service::GroupCommit`).
    pub(crate) fn io_complete(&mut self, dev: u32, request: IoRequest) {
        let d = &mut self.work.objects.devices[dev as usize];
        d.in_service -= 1;
        let (group, leader_iowait) = match d.spec.service {
            Service::Queued => (false, true),
            Service::Waited => (false, false),
            Service::GroupCommit { leader_iowait } => (true, leader_iowait),
        };
        let carried = if group { std::mem::take(&mut d.committing) } else { Vec::new() };
        let mut next_leader = None;
        if let Some((next, service_ns, transfer_ns)) = d.queue.pop_front() {
            d.in_service += 1;
            if group {
                d.committing.push(next);
                d.committing.extend(d.queue.drain(..).map(|(r, _, _)| r));
                next_leader = Some(next);
            }
            let at = d.completes_at(self.q.now(), service_ns, transfer_ns);
            self.q.push(at, Event::IoComplete { dev, request: next });
        }
        let completion = d.spec.completion;
        // A coalescing device raises its interrupt when nothing is left in service: until
        // then what completes waits, and the interrupt's softirq ends all of it in order.
        let held;
        let ended = if !carried.is_empty() {
            &carried[..]
        } else if matches!(completion, Completion::Line { coalesced: true, .. }) {
            d.held.push(request);
            if d.in_service > 0 {
                return;
            }
            held = std::mem::take(&mut d.held);
            &held[..]
        } else {
            std::slice::from_ref(&request)
        };
        for &r in ended {
            let t = match r {
                IoRequest::Writeback { cpu } => {
                    let cpu = completion_cpu(&self.machine, completion, cpu as usize);
                    self.queue_conversion(None, Waker::Softirq { cpu: Some(cpu), sync: false });
                    continue;
                }
                IoRequest::Task(t) => t as usize,
            };
            // Each queued request's submitter slept on the device; of a commit's, its leader.
            let iowait = leader_iowait && (!group || r == request);
            let waker = Waker::Softirq { cpu: self.sched.completing_cpu(&self.machine, completion, t), sync: false };
            if self.hand_to_worker(dev, t, iowait, waker) {
                continue;
            }
            if iowait {
                self.sched.iowait_sleep(&self.q, t, false);
            }
            self.wake_task(t, waker, UpdateFlags { iowait, ..UpdateFlags::default() });
        }
        if let Some(IoRequest::Task(next)) = next_leader.filter(|_| leader_iowait) {
            self.sched.iowait_sleep(&self.q, next as usize, true);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::sched::task::{Amount, Op, TaskState};
    use crate::sim::test_support::{run, run_on_kvm_guest, Tasks};
    use crate::sim::SimConfig;
    use crate::workload::{Completion, DeviceSpec, Service, TaskSpec};

    #[test]
    fn flushes_that_join_a_commit_leave_no_task_counted_in_iowait() {
        // Three tasks flush a group-commit device (PostgreSQL's WAL) 200 times each, 30 µs of
        // work apart: many flushes the kblockd worker dispatches meet a commit under way and
        // join the next one, whose submitter then waits for that commit, out of iowait unless
        // it leads it. Once every flusher has exited, no CPU counts a task asleep in iowait
        // (rq->nr_iowait), which menu and ondemand would read for the rest of the run.
        let flush = Op::IoFlush { dev: 0, service_ns: Amount::Fixed(40_000.0), dispatch_cycles: 60_000.0 };
        let program: Vec<Op> = (0..200).flat_map(|_| [run(90_000.0), flush.clone()]).chain([Op::Exit]).collect();
        let program: std::rc::Rc<[Op]> = program.into();
        let wal = DeviceSpec {
            name: "wal".into(),
            queue_depth: 1,
            service: Service::GroupCommit { leader_iowait: true },
            completion: Completion::Submitter,
        };
        let tasks = (0..3).map(|i| TaskSpec::new(format!("flusher-{i}"), program.clone())).collect();
        let cfg = SimConfig::new("performance:kernel=6.18", "test:kthread_hz=0").duration_ns(Some(100_000_000));
        let sim = run_on_kvm_guest(&cfg, Tasks { tasks, programs: Vec::new(), devices: vec![wal] });
        let mut flushers = sim.sched.tasks.iter().filter(|t| t.name.starts_with("flusher"));
        let exited = flushers.clone().count() == 3 && flushers.all(|t| t.state == TaskState::Exited);
        assert!(exited, "the flushers ran to their end");
        let counted: Vec<u32> = sim.sched.cpus.iter().map(|c| c.nr_iowait).collect();
        assert_eq!(counted, [0, 0]);
    }
}
