//! What tasks block on besides timers: channels (condition signals, connections), pipes, unix
//! stream sockets, barriers,
//! mutexes, I/O devices and child processes. Each keeps its waiters in FIFO order, so wake-up
//! order is deterministic. Their operations in a run are in sim/objects.rs.

use crate::engine::EventQueue;
use crate::machine::Machine;
use crate::sched::Sched;
use std::collections::VecDeque;

use crate::engine::{IoRequest, TimeNs};
use crate::workload::{Completion, DeviceSpec};

#[derive(Default)]
pub(crate) struct Channel {
    pub(crate) tokens: u64,
    pub(crate) waiters: VecDeque<usize>,
    /// The return addresses of the queued tokens of an `Ask`/`Take` channel, in order.
    pub(crate) answers: VecDeque<u32>,
    /// The releases carried by the queued tokens of a `PostRelease` channel, in order.
    pub(crate) releases: VecDeque<TimeNs>,
}

#[derive(Default)]
pub(crate) struct Barrier {
    pub(crate) arrived: Vec<usize>,
}

#[derive(Default)]
pub(crate) struct Mutex {
    pub(crate) owner: Option<usize>,
    pub(crate) waiters: VecDeque<usize>,
}

/// The kblockd worker of each CPU that sleeps waiting for a plugged request, by CPU
/// (`Op::WaitPlugged`).
pub(crate) type KblockdIdle = Vec<Option<usize>>;

pub(crate) struct Device {
    pub(crate) spec: DeviceSpec,
    pub(crate) in_service: u32,
    /// Requests waiting for a slot: (request, service ns, transfer ns).
    pub(crate) queue: VecDeque<(IoRequest, u64, u64)>,
    /// When the data channel is next free.
    pub(crate) channel_free_at: TimeNs,
    /// Group commit: the requests the commit under way carries.
    pub(crate) committing: Vec<IoRequest>,
    /// A coalescing interrupt (`Completion::Line`'s `coalesced`): requests done while others
    /// are still in service, in the order they completed, ended with the last of them.
    pub(crate) held: Vec<IoRequest>,
    /// The submitters of requests in flight whose end ext4's end-I/O worker does.
    pub(crate) end_work: Vec<usize>,
    /// Requests flushed from a sleeping task's plug, waiting for the kblockd worker of the
    /// CPU they were plugged on (`Op::IoPlugged`): (CPU, task, service ns, dispatch cycles).
    pub(crate) plugged: Vec<(usize, usize, u64, f64)>,
}

impl Device {
    /// When a request starting service at `now` completes: its own service time, then its
    /// transfer once the channel is free (requests take the channel in the order they start),
    /// reserving the channel until then. The request keeps its slot throughout, as a command
    /// stays in the device's queue until it completes.
    pub(crate) fn completes_at(&mut self, now: TimeNs, service_ns: u64, transfer_ns: u64) -> TimeNs {
        let served = now + service_ns;
        if transfer_ns == 0 {
            return served;
        }
        let done = served.max(self.channel_free_at) + transfer_ns;
        self.channel_free_at = done;
        done
    }
}

/// A task waiting for the end of its I/O, and whether it sleeps in iowait.
pub(crate) type IoWaiter = (usize, bool);

/// ext4's end-I/O worker (`workload::kthreads::end_io_worker`): the conversions completed
/// writes queued for it and not yet taken, the one it runs, and the worker while it sleeps.
#[derive(Default)]
pub(crate) struct EndIoWork {
    /// Whether the run has the worker (the kernel converts at the I/O's end in a workqueue).
    pub(crate) present: bool,
    /// Queued conversions, oldest first, each with the task waiting for its write if one is
    /// (a writeback's has none).
    pub(crate) pending: VecDeque<Option<IoWaiter>>,
    /// The waiter of the conversion the worker runs now.
    pub(crate) in_hand: Option<IoWaiter>,
    pub(crate) idle: Option<usize>,
}

/// The shared objects of one simulation, created on first use by id (devices are declared by
/// the workload).
#[derive(Default)]
pub(crate) struct Objects {
    pub(crate) channels: Vec<Channel>,
    pub(crate) pipes: Vec<crate::sched::pipe::Pipe>,
    pub(crate) unix_streams: Vec<crate::sched::unix_stream::UnixStream>,
    pub(crate) tcp_streams: Vec<crate::sched::tcp_stream::TcpStream>,
    pub(crate) barriers: Vec<Barrier>,
    pub(crate) mutexes: Vec<Mutex>,
    pub(crate) devices: Vec<Device>,
    pub(crate) kblockd_idle: KblockdIdle,
    pub(crate) end_io: EndIoWork,
}

impl Objects {
    pub(crate) fn with_devices(specs: Vec<DeviceSpec>) -> Objects {
        Objects {
            devices: specs
                .into_iter()
                .map(|spec| Device {
                    spec,
                    in_service: 0,
                    queue: VecDeque::new(),
                    channel_free_at: 0,
                    committing: Vec::new(),
                    held: Vec::new(),
                    end_work: Vec::new(),
                    plugged: Vec::new(),
                })
                .collect(),
            ..Objects::default()
        }
    }
}

pub(crate) fn slot<T: Default>(v: &mut Vec<T>, id: u32) -> &mut T {
    let id = id as usize;
    if v.len() <= id {
        v.resize_with(id + 1, T::default);
    }
    &mut v[id]
}

/// What an operation on an object means for the task that performed it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Carry on with the next operation.
    Continue,
    /// Sleep until someone wakes the task.
    Sleep,
}

/// The CPU where a request submitted from `submitter` completes on a device completing as
/// `completion` says: a single-line device's interrupt CPU when it shares the submitter's
/// last-level cache, where the block layer completes the request (`blk_mq_complete_need_ipi`
/// with `rq_affinity` 1); the submitter's own CPU otherwise (an IPI sends it there), or on a
/// device with a queue per CPU.
pub(crate) fn completion_cpu(machine: &Machine, completion: Completion, submitter: usize) -> usize {
    match completion.line_cpu(machine.plat.cpus.len()) {
        Some(irq_cpu) if machine.plat.cpus[irq_cpu].llc == machine.plat.cpus[submitter].llc => irq_cpu,
        _ => submitter,
    }
}

impl Sched {
    /// The CPU whose interrupt wakes `task` at a completion, when it is not the CPU the task
    /// slept on (None: the completion runs there).
    pub(crate) fn completing_cpu(&self, machine: &Machine, completion: Completion, task: usize) -> Option<usize> {
        let slept_on = self.tasks[task].cpu;
        let cpu = completion_cpu(machine, completion, slept_on);
        (cpu != slept_on).then_some(cpu)
    }

    /// Count `task` in (or out of) the iowait sleepers of the CPU it slept on.
    pub(crate) fn iowait_sleep(&mut self, q: &EventQueue, task: usize, asleep: bool) {
        // The idle time until now was spent with the old count (ondemand's io_is_busy reads it).
        let now = q.now();
        let c = &mut self.cpus[self.tasks[task].cpu];
        c.account_iowait(now);
        if asleep {
            c.nr_iowait += 1;
        } else {
            c.nr_iowait -= 1;
        }
    }
}
