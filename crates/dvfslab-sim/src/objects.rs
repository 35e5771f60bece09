//! What tasks block on besides timers: channels (pipes, sockets, condition signals), barriers,
//! mutexes, I/O devices and child processes. Each keeps its waiters in FIFO order, so wake-up
//! order is deterministic.

use std::collections::VecDeque;

use crate::engine::Event;
use crate::governor::UpdateFlags;
use crate::sim::Sim;
use crate::workload::DeviceSpec;

#[derive(Default)]
pub(crate) struct Channel {
    tokens: u64,
    waiters: VecDeque<usize>,
}

#[derive(Default)]
pub(crate) struct Barrier {
    arrived: Vec<usize>,
}

#[derive(Default)]
pub(crate) struct Mutex {
    owner: Option<usize>,
    waiters: VecDeque<usize>,
}

struct Device {
    spec: DeviceSpec,
    in_service: u32,
    queue: VecDeque<(usize, u64)>,
}

/// The shared objects of one simulation, created on first use by id (devices are declared by
/// the workload).
#[derive(Default)]
pub(crate) struct Objects {
    channels: Vec<Channel>,
    barriers: Vec<Barrier>,
    mutexes: Vec<Mutex>,
    devices: Vec<Device>,
}

impl Objects {
    pub(crate) fn with_devices(specs: Vec<DeviceSpec>) -> Objects {
        Objects {
            devices: specs.into_iter().map(|spec| Device { spec, in_service: 0, queue: VecDeque::new() }).collect(),
            ..Objects::default()
        }
    }
}

fn slot<T: Default>(v: &mut Vec<T>, id: u32) -> &mut T {
    let id = id as usize;
    if v.len() <= id {
        v.resize_with(id + 1, T::default);
    }
    &mut v[id]
}

/// What an operation on an object means for the task that performed it.
pub(crate) enum Outcome {
    /// Carry on with the next operation.
    Continue,
    /// Sleep until someone wakes the task.
    Sleep,
}

impl Sim {
    /// `Op::Post`: hand a token to the first waiter (waking it) or keep it.
    pub(crate) fn channel_post(&mut self, ch: u32, waker_cpu: usize, sync: bool) {
        let c = slot(&mut self.objects.channels, ch);
        match c.waiters.pop_front() {
            Some(task) => self.wake_task(task, Some((waker_cpu, sync)), UpdateFlags::default()),
            None => c.tokens += 1,
        }
    }

    /// `Op::Wait`: take a token, or queue up and sleep.
    pub(crate) fn channel_wait(&mut self, ch: u32, task: usize) -> Outcome {
        let c = slot(&mut self.objects.channels, ch);
        if c.tokens > 0 {
            c.tokens -= 1;
            Outcome::Continue
        } else {
            c.waiters.push_back(task);
            Outcome::Sleep
        }
    }

    /// `Op::Barrier`: the n-th arrival releases everyone who waited.
    pub(crate) fn barrier_arrive(&mut self, id: u32, n: u32, task: usize, cpu: usize) -> Outcome {
        let b = slot(&mut self.objects.barriers, id);
        if b.arrived.len() + 1 < n as usize {
            b.arrived.push(task);
            return Outcome::Sleep;
        }
        let released = std::mem::take(&mut b.arrived);
        for t in released {
            self.wake_task(t, Some((cpu, false)), UpdateFlags::default());
        }
        Outcome::Continue
    }

    pub(crate) fn mutex_lock(&mut self, id: u32, task: usize) -> Outcome {
        let m = slot(&mut self.objects.mutexes, id);
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
        let m = slot(&mut self.objects.mutexes, id);
        m.owner = m.waiters.pop_front();
        if let Some(next) = m.owner {
            self.wake_task(next, Some((cpu, false)), UpdateFlags::default());
        }
    }

    /// `Op::Io`: start service at once if the device has a free slot, else queue.
    pub(crate) fn io_submit(&mut self, dev: u32, task: usize, service_ns: u64) {
        let d = &mut self.objects.devices[dev as usize];
        if d.in_service < d.spec.queue_depth {
            d.in_service += 1;
            let at = self.q.now() + service_ns;
            self.q.push(at, Event::IoComplete { dev, task: task as u32 });
        } else {
            d.queue.push_back((task, service_ns));
        }
    }

    /// An I/O completed: wake its task with the iowait flag and start the next queued one.
    pub(crate) fn io_complete(&mut self, dev: u32, task: usize) {
        let d = &mut self.objects.devices[dev as usize];
        d.in_service -= 1;
        if let Some((next, service_ns)) = d.queue.pop_front() {
            d.in_service += 1;
            let at = self.q.now() + service_ns;
            self.q.push(at, Event::IoComplete { dev, task: next as u32 });
        }
        self.wake_task(task, None, UpdateFlags { iowait: true });
    }
}
