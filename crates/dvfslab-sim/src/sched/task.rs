//! Tasks and the programs they run. A program is a list of operations with jumps, interpreted
//! one operation at a time; workloads build programs, the scheduler runs them.

use std::rc::Rc;

use crate::engine::TimeNs;
use crate::sched::pelt::{SchedAvg, UtilEst};

/// An amount drawn each time an operation runs: fixed, uniform in `[lo, hi]`, exponential, or
/// from a measured distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Amount {
    Fixed(f64),
    Uniform(f64, f64),
    /// Exponentially distributed with this mean: the gaps of a Poisson process, the
    /// wake-ups of many independent sources together.
    Exponential(f64),
    /// A measured distribution ([`Quantiles`]) times a factor.
    Measured(&'static Quantiles, f64),
}

/// A distribution by points of its inverse CDF, (cumulative probability, value), with the
/// probabilities rising from 0 to 1 and the values not falling: a draw is the value at a
/// uniform probability, interpolated linearly between the points (a recording's quantiles).
#[derive(Debug, PartialEq)]
pub struct Quantiles(pub &'static [(f64, f64)]);

impl Quantiles {
    /// The value at cumulative probability `u` in [0, 1].
    fn at(&self, u: f64) -> f64 {
        let points = self.0;
        let i = points.partition_point(|&(p, _)| p <= u).clamp(1, points.len() - 1);
        let ((p0, v0), (p1, v1)) = (points[i - 1], points[i]);
        if p1 > p0 {
            v0 + (v1 - v0) * ((u - p0) / (p1 - p0)).clamp(0.0, 1.0)
        } else {
            v1
        }
    }

    /// The mean of the draws: each segment's probability times its mid value.
    pub fn mean(&self) -> f64 {
        self.0.windows(2).map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0).sum()
    }
}

impl Amount {
    /// None at all.
    pub const ZERO: Amount = Amount::Fixed(0.0);

    /// `mean` ± `jitter_pct` percent, uniform.
    pub fn jittered(mean: f64, jitter_pct: f64) -> Amount {
        if jitter_pct <= 0.0 {
            Amount::Fixed(mean)
        } else {
            let d = mean * jitter_pct / 100.0;
            Amount::Uniform((mean - d).max(0.0), mean + d)
        }
    }

    /// The mean of the draws.
    pub fn mean(self) -> f64 {
        match self {
            Amount::Fixed(v) => v,
            Amount::Uniform(lo, hi) => (lo + hi) / 2.0,
            Amount::Exponential(mean) => mean,
            Amount::Measured(q, k) => q.mean() * k,
        }
    }

    /// One draw from `rng`. A range too wide for a float to span is read as its low end.
    pub fn draw(self, rng: &mut impl rand::Rng) -> f64 {
        match self {
            Amount::Fixed(v) => v,
            Amount::Uniform(lo, hi) if (hi - lo).is_finite() => rng.gen_range(lo..=hi),
            Amount::Uniform(lo, _) => lo,
            // Inverse transform: -mean · ln(1 - u) for u uniform in [0, 1).
            Amount::Exponential(mean) => -mean * (1.0 - rng.gen::<f64>()).ln(),
            Amount::Measured(q, k) => q.at(rng.gen::<f64>()) * k,
        }
    }
}

/// What a pipe or socket operation costs more, in CPU cycles, where its cache lines come from
/// another CPU (`sched/message_cpus.rs`): the message's own (`message`: read on another CPU
/// than its writer's, or written where another CPU read last) and the object's shared lines
/// (`shared`: its last operation was on another CPU).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CrossingCycles {
    pub message: u32,
    pub shared: u32,
}

/// One operation of a task program.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Execute `cycles` of work, counted in cycles at the cluster's base frequency. A fraction
    /// `mem_frac` of the time it takes at base frequency is memory stall that does not speed up
    /// with frequency.
    Run { cycles: Amount, mem_frac: f64 },
    /// Sleep for a duration (ns).
    Sleep { ns: Amount },
    /// Sleep until the next multiple of `period_ns` after the task's start: a release that
    /// skips the grid points already past (a display's vsync). The release time is the task's
    /// `activation_ns`.
    WaitPeriod { period_ns: u64 },
    /// An application's periodic timer (rt-app's `timer` event): the next release is the
    /// previous one plus `period_ns`; the task sleeps until it if it is still ahead, and goes on
    /// at once, without sleeping, when it is already past. What a late release becomes depends
    /// on `mode`. The release time is the task's `activation_ns` (the first is its start).
    Timer { period_ns: u64, mode: TimerMode },
    /// Execute for a fixed wall time (ns), whatever the frequency (rt-app's `runtime`).
    RunFor { ns: Amount },
    /// Post one token to channel `ch`, waking its first waiter if any (a pipe write, a
    /// condition signal). `sync`: the poster is about to wait, so the woken task may be pulled
    /// to the poster's CPU (wake-affine).
    Post { ch: u32, sync: bool },
    /// `Post` a token that carries the poster's last release (`activation_ns`): the task that
    /// takes it with `Wait` adopts that release as its own, so its `Mark::ActivationDone`
    /// times the whole hand-over from the poster's release (a UI frame that RenderThread
    /// finishes, timed from its vsync). A channel is used either with `PostRelease` or with
    /// `Post`.
    PostRelease { ch: u32, sync: bool },
    /// Post one token to channel `ch` over loopback TCP: the send raises the NET_RX softirq on
    /// the poster's CPU, whose receive wakes the first waiter from there, in softirq context.
    /// `sync`: the wake-up carries `WF_SYNC`, as a data-ready wake-up (sock_def_readable)
    /// does; a window update that wakes a blocked sender (sk_stream_write_space) does not.
    Loopback { ch: u32, sync: bool },
    /// Write a message of `bytes` on the loopback TCP stream whose data channel is `ch`, as
    /// Linux sends it (`sched/tcp_stream.rs`: Nagle's algorithm holds a short segment while an
    /// earlier one is unacknowledged): each message the segments sent complete is posted to
    /// `ch` from the NET_RX softirq on this CPU, waking the reader as `Loopback` with `sync`.
    TcpSend { ch: u32, bytes: u32 },
    /// The end of a receive call of up to `call_bytes` on the stream whose data channel is
    /// `ch`: the reader acknowledges if the call drained the channel or took more than an MSS
    /// (`tcp_cleanup_rbuf`), which lets the writer's held data go.
    TcpAck { ch: u32, call_bytes: u32 },
    /// Post one token to channel `ch` unless `capacity` tokens already wait there, in which
    /// case it is lost (a datagram reaching a full socket buffer). A waiter is woken as by
    /// `Loopback` with `sync`: from the poster's softirq, whose receive queued the datagram.
    Offer { ch: u32, capacity: u32 },
    /// Take a token from channel `ch`, sleeping until one is posted.
    Wait { ch: u32 },
    /// Take a token from channel `ch` if one is queued and go on; else continue at operation
    /// `empty`, without sleeping: the rest of a call that takes what is queued (`tcp_recvmsg`
    /// copying every segment that arrived, up to its length, before it returns).
    Poll { ch: u32, empty: usize },
    /// Write one message of `bytes` (under a page) to anonymous pipe `pipe`, sleeping while it
    /// is full; a write to an empty pipe wakes its reader, sync (`pipe_write`, `sched/pipe.rs`).
    /// Pipe ids are offset as channel ids are. `crossing`: what the write costs more where its
    /// cache lines come from another CPU (`sched/message_cpus.rs`), charged with the task's
    /// next `Run`.
    PipeWrite { pipe: u32, bytes: u32, crossing: CrossingCycles },
    /// Read one message from pipe `pipe`, sleeping while it is empty; a read that makes room
    /// wakes blocked writers as the run's kernel does (`pipe_read`, `sched/pipe.rs`).
    /// `crossing` as `PipeWrite`'s.
    PipeRead { pipe: u32, crossing: CrossingCycles },
    /// Send one message charging `truesize` bytes to `AF_UNIX` stream socket `sock`, sleeping
    /// while the socket's charge is at its send buffer; wakes the reader if it sleeps, sync
    /// (`unix_stream_sendmsg`, `sched/unix_stream.rs`). Socket ids are offset as channel ids are.
    /// `crossing` as `PipeWrite`'s.
    UnixSend { sock: u32, truesize: u32, crossing: CrossingCycles },
    /// Read one message from socket `sock`, sleeping while none is queued; freeing its
    /// `truesize` bytes wakes every blocked sender once the charge is down to a quarter of the
    /// send buffer (`unix_write_space`). `crossing` as `PipeWrite`'s.
    UnixRecv { sock: u32, truesize: u32, crossing: CrossingCycles },
    /// Take a token from channel `ch` as `Wait` does, but sleeping uninterruptibly (state D):
    /// the kernel's `wait_for_completion`, as a vfork parent waits for its child to exec
    /// (`wait_for_vfork_done`); the child's `Post` is the `complete`.
    WaitUninterruptible { ch: u32 },
    /// Post a token to channel `ch` that carries a return address, channel `answer`: one of
    /// many senders on a shared channel (connections one thread polls) says where it wants the
    /// answer. `sync` as for `Post`. A channel is used either with `Ask`/`Take` or with
    /// `Post`/`Wait`.
    Ask { ch: u32, answer: u32, sync: bool },
    /// Take a token from channel `ch` as `Wait` does, and remember its return address.
    Take { ch: u32 },
    /// Post a token to the return address of the token last taken (a reply on the connection
    /// whose request was served; `poll()` then `send()` on that connection's socket).
    Answer { sync: bool },
    /// Wait until `n` tasks have reached barrier `id`; the last one releases all.
    Barrier { id: u32, n: u32 },
    /// Take mutex `id`, sleeping while another task holds it.
    Lock { id: u32 },
    /// Release mutex `id`, handing it to the first waiter.
    Unlock { id: u32 },
    /// Submit an I/O to device `dev` and sleep until it completes; the wake-up carries the
    /// iowait flag. `service_ns` is the request's own device time (up to the device's queue
    /// depth at once); `transfer_ns` its time on the device's data channel, which moves one
    /// request's data at a time, after that (0: none, or folded into `service_ns`).
    Io { dev: u32, service_ns: Amount, transfer_ns: Amount },
    /// Submit a write to device `dev` and sleep on it in D as `Io` does, but where the kernel
    /// has ext4's end-I/O worker (`workload::kthreads::end_io_worker`) the I/O's end is the
    /// worker's: the completion's softirq queues the conversion of the written unwritten
    /// extents with this task as its waiter, waking the worker, whose `EndIo` wakes the task
    /// once the pages' writeback has ended. Without the worker the softirq wakes the task.
    IoEndWork { dev: u32, service_ns: Amount },
    /// Submit a request to device `dev` inside a block plug and sleep in D until it completes
    /// (`blkdev_issue_discard`: the bio waits in the task's plug while `submit_bio_wait`
    /// sleeps). The sleep flushes the plug from the scheduler, which leaves the hardware queue
    /// to this CPU's kblockd worker: the request reaches the device when that worker has run
    /// (see `workload::kthreads`). `service_ns` as for `Io`, from the worker's dispatch;
    /// `dispatch_cycles` the worker's run to dispatch this request (cycles at 2.6 GHz, the
    /// recordings' clock, run as time at the worker's CPU's base frequency).
    IoPlugged { dev: u32, service_ns: Amount, dispatch_cycles: f64 },
    /// fdatasync's cache flush on group-commit device `dev` (PostgreSQL's WAL flush): blk-mq
    /// sends a flush request through its flush machinery, which puts it on the queue's
    /// requeue list and kicks it to this CPU's high-priority kblockd worker
    /// (`blk_insert_flush` → `blk_kick_flush` → `blk_mq_kick_requeue_list`), so the commit
    /// reaches the device when that worker has run, as an `IoPlugged` request does. One that
    /// comes while a commit is on the device joins the next commit as `Io`'s does (its
    /// submitter, waiting for the commit under the WAL's lock in the kernel, issues nothing
    /// itself). `service_ns` and `dispatch_cycles` as for `IoPlugged`.
    IoFlush { dev: u32, service_ns: Amount, dispatch_cycles: f64 },
    /// Write a task's dirty data back without waiting for it: a write request to device `dev`
    /// (`service_ns` as for `Io`), submitted at once, the task going on (closing a file it
    /// truncated and rewrote starts its writeback: `ext4_release_file` → `ext4_alloc_da_blocks`
    /// → `filemap_flush`). Its completion, in the block softirq, queues the conversion of the
    /// written unwritten extents to ext4's end-I/O worker where the kernel has one
    /// (`workload::kthreads::end_io_worker`).
    IoWriteback { dev: u32, service_ns: Amount },
    /// The end-I/O worker's wait for work: take the oldest conversion a completion queued
    /// (`IoWriteback`, `IoEndWork`) and go on, or sleep until one is queued.
    WaitEndIoWork,
    /// RCU's grace-period kthread's wait for work: go on if a grace period is to start or
    /// end, else sleep until woken or until the force-quiescent-state timeout (`sim/rcu.rs`).
    WaitGp,
    /// The grace-period kthread's step after a wake-up: scan, clean up, start (`sim/rcu.rs`).
    GpWork,
    /// ksoftirqd's wait for work: go on if softirqs were handed to it, else sleep until a
    /// softirq that outlasted its time limit hands it the rest (`sim/softirq.rs`).
    WaitSoftirq,
    /// A kblockd worker's wait for work: sleep until a task plugs a request on this CPU, or
    /// go on at once if one is waiting.
    WaitPlugged,
    /// A kblockd worker's run before its dispatch: the `dispatch_cycles` of every request
    /// plugged on this CPU.
    RunPlugged,
    /// A kblockd worker's dispatch: every request plugged on this CPU goes to its device
    /// (`blk_mq_run_work_fn`).
    RunHwQueue,
    /// The end-I/O worker's end of the conversion it took: wake the task waiting for that
    /// I/O (`IoEndWork`), if one is, from this task's CPU.
    EndIo,
    /// Fork `count` tasks running program `program` of the workload's program table.
    Spawn { program: u32, count: u32 },
    /// Sleep until every task this one spawned has exited (wait4).
    WaitChildren,
    /// execve of the program `comm`: its balancing point (sched_exec), where the task moves to
    /// the CPU that fork balancing would pick from here if that CPU is idle; and the task takes
    /// the program's name as its comm (`__set_task_comm` in `begin_new_exec`). On a guest the
    /// new image's C library start-up then waits for its CPUIDs' VM exits
    /// (`estimates::kernel::EXEC_STARTUP_CPUIDS` at the platform's `vm_exits.cpuid_us`); the
    /// rest of the exec is the program's own `Op::Run`.
    Exec { comm: &'static str },
    /// Give up the CPU to a waiting task, if any (sched_yield).
    Yield,
    /// Start a session of its own (setsid): with task groups (autogroup) the task moves to a
    /// new group (sched_autogroup_create_attach), as every process PostgreSQL's postmaster
    /// forks does first (InitPostmasterChild).
    Setsid,
    /// Change the CPUs the task may run on (None = all); it moves if its CPU is excluded.
    SetAffinity { cpus: Option<std::rc::Rc<[usize]>> },
    /// Change the task's uclamp requests.
    SetUclamp { min: Option<u32>, max: Option<u32> },
    /// Record a progress mark for the workload's metric.
    Mark(Mark),
    /// Continue at operation `to`.
    Jump { to: usize },
    /// Run the operations from `to` up to here `times` times in all, then go on (a counted
    /// loop; loops may nest).
    Repeat { to: usize, times: u32 },
    /// Go on with the next piece of a program produced on demand (see [`Pieces`]).
    Continue(NextPiece),
    /// The task exits.
    Exit,
}

/// How a periodic [`Op::Timer`] treats a release that is already past when the task reaches it
/// (rt-app's `mode` key of a `timer` event; `relative` is rt-app's default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerMode {
    /// The late release is moved to now: the following ones are counted from here.
    Relative,
    /// The releases stay on the fixed grid from the task's start: a late task runs its
    /// activations back to back until it has caught up (clock_nanosleep with TIMER_ABSTIME,
    /// or a periodic timerfd).
    Absolute,
}

impl TimerMode {
    /// The release after `prev` and whether to sleep until it, seen at time `now`: the grid
    /// point `prev + period` if it is still ahead; if it is past, that grid point in absolute
    /// mode (no sleep) or `now` in relative mode (no sleep).
    pub fn next_release(self, prev: TimeNs, period_ns: u64, now: TimeNs) -> (TimeNs, bool) {
        let due = prev.saturating_add(period_ns);
        if now < due {
            (due, true)
        } else {
            match self {
                TimerMode::Relative => (now, false),
                TimerMode::Absolute => (due, false),
            }
        }
    }
}

/// A program produced in pieces on demand, so that a benchmark of millions of steps holds one
/// piece at a time. Each piece ends with `Op::Continue` to the next, with a jump or with an
/// exit; jumps and counted loops stay within their piece.
pub trait Pieces {
    fn piece(self: std::rc::Rc<Self>, index: usize) -> std::rc::Rc<[Op]>;
}

/// Where a program produced in pieces goes on: piece `index` of `source`.
#[derive(Clone)]
pub struct NextPiece {
    pub source: std::rc::Rc<dyn Pieces>,
    pub index: usize,
}

impl NextPiece {
    pub fn load(&self) -> std::rc::Rc<[Op]> {
        self.source.clone().piece(self.index)
    }
}

impl std::fmt::Debug for NextPiece {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NextPiece({})", self.index)
    }
}

impl PartialEq for NextPiece {
    fn eq(&self, other: &NextPiece) -> bool {
        std::ptr::addr_eq(std::rc::Rc::as_ptr(&self.source), std::rc::Rc::as_ptr(&other.source))
            && self.index == other.index
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// Add `amount` to the workload's counter `counter` (operations, bytes, transactions).
    Add { counter: u16, amount: u64 },
    /// The end of a periodic activation: response time = now - activation.
    ActivationDone,
    /// Start timing interval `slot` of this task (a loadfile pass, a request).
    Start(u32),
    /// End interval `slot`: its duration becomes a latency sample of that slot.
    End(u32),
    /// A latency sample of `slot`: the time since the task's last release (`activation_ns`).
    SinceRelease(u32),
    /// The wake-up latency of the [`Op::Timer`] just passed: now minus its release if the task
    /// slept until it, 0 if it went on without sleeping (rt-app's `wu_lat`).
    TimerWakeUp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// On a runqueue, waiting or running.
    Runnable,
    /// Sleeping until a timer.
    Sleeping,
    Exited,
}

#[derive(Clone, Debug)]
pub struct Task {
    pub id: usize,
    pub name: String,
    pub program: std::rc::Rc<[Op]>,
    pub pc: usize,
    /// Operations of its program interpreted so far: tells a call interpreting it that a
    /// nested call took its program on meanwhile (`Sim::interpret`).
    pub ops_read: u64,
    pub state: TaskState,
    pub cpu: usize,
    /// Work left in the current Run operation (cycles at base frequency).
    pub work_left: f64,
    pub mem_frac: f64,
    /// Work submitted and completed over the task's life, for the conservation check.
    pub work_submitted: f64,
    pub work_done: f64,
    pub vruntime: u64,
    /// EEVDF (6.6+, `sched/eevdf.rs`): the virtual deadline, the lag the task last left its
    /// run-queue with, the vruntime up to which its current pick protects it from a waking
    /// task (RUN_TO_PARITY), whether it blocked while not eligible and still waits on its
    /// run-queue (DELAY_DEQUEUE, 6.12+), and the deadline relative to its vruntime that a move
    /// to another CPU carries (PLACE_REL_DEADLINE, 6.12+).
    pub deadline: u64,
    pub vlag: i64,
    pub vprot: u64,
    /// Its place among equal deadlines while it waits in a run-queue's tree (`eevdf::Queue`).
    pub joined: u64,
    /// Its place among equal vruntimes while it waits (`Cpu::queue_by_vruntime`).
    pub queued_order: u64,
    pub delayed: bool,
    pub rel_deadline: Option<u64>,
    /// When the task last started running (for vruntime and slice accounting).
    pub exec_start_ns: TimeNs,
    pub sum_exec_ns: u64,
    pub slice_start_exec_ns: u64,
    pub avg: SchedAvg,
    pub util_est: UtilEst,
    pub start_ns: TimeNs,
    pub activation_ns: TimeNs,
    /// When the task last reached an [`Op::Timer`] (for its wake-up latency).
    pub timer_reached_ns: TimeNs,
    pub timer_token: u32,
    /// Run segments of fixed wall time (RunFor) rather than fixed work.
    pub fixed_time: bool,
    /// The open latency intervals: (slot, start), a few at a time (an interval closes at its
    /// `Mark::End`), so that a program with many slots costs no memory per slot here.
    pub marks: Vec<(u32, TimeNs)>,
    /// Counted loops under way: (index of the Repeat op, passes still to run).
    pub loops: Vec<(usize, u32)>,
    pub parent: Option<usize>,
    /// The workload's task this one descends from by forks (itself if it was not forked).
    pub root: usize,
    pub live_children: u32,
    pub waiting_children: bool,
    /// Past `exit_notify` (a zombie that still runs to its last switch, `do_task_dead`).
    pub exit_notified: bool,
    /// Woken from another CPU than the one it was queued on, and not run since: its next
    /// switch-in pays the platform's `sched_costs.remote_wake_us`.
    pub woken_remote: bool,
    pub attrs: TaskAttrs,
    /// On its CPU's run-queue (current or waiting), its load counted in the CPU's
    /// `runnable_load`.
    pub on_rq: bool,
    /// Placed on a CPU once (the first wake-up is a fork: fork balancing and new-task util).
    pub placed: bool,
    /// The return address (absolute channel id) of the token last taken by `Op::Take`.
    pub answer_to: Option<u32>,
    /// Woken from a pipe's wait: the `Op::PipeWrite` or `Op::PipeRead` it slept in goes on
    /// as the kernel's does after its wait (`sim/pipe.rs`).
    pub pipe_retry: bool,
    /// CPU work the cache lines of its pipe and socket operations moved between CPUs added
    /// (`Op::PipeWrite`'s `crossing` and the like), charged with the task's next `Op::Run`.
    pub crossing_cycles: f64,
    /// The CPU wake-up placement last left behind (`p->recent_used_cpu`,
    /// `Sim::select_idle_sibling`); at fork, the CPU the task was forked on (`Sim::start_task`).
    pub recent_used_cpu: Option<usize>,
    /// How often this task, waking others, switched to a different wakee (`wakee_flips`,
    /// halved once a second), the last one it woke, and when the count was last halved; a
    /// forked task starts with its parent's (`Sim::inherit_wakee`).
    pub wakee_flips: u32,
    pub last_wakee: Option<usize>,
    pub wakee_flip_decay_ns: TimeNs,
}

impl Task {
    /// Its load weight (se->load.weight): its policy's and nice value's ([`TaskAttrs::weight`]).
    pub fn weight(&self) -> u64 {
        self.attrs.weight()
    }

    pub fn new(id: usize, name: String, program: std::rc::Rc<[Op]>, start_ns: TimeNs) -> Task {
        Task {
            id,
            name,
            program,
            pc: 0,
            ops_read: 0,
            state: TaskState::Sleeping,
            cpu: 0,
            work_left: 0.0,
            mem_frac: 0.0,
            work_submitted: 0.0,
            work_done: 0.0,
            vruntime: 0,
            deadline: 0,
            vlag: 0,
            vprot: 0,
            joined: 0,
            queued_order: 0,
            delayed: false,
            rel_deadline: None,
            exec_start_ns: 0,
            sum_exec_ns: 0,
            slice_start_exec_ns: 0,
            avg: SchedAvg::default(),
            util_est: UtilEst::default(),
            start_ns,
            activation_ns: start_ns,
            timer_reached_ns: start_ns,
            timer_token: 0,
            fixed_time: false,
            marks: Vec::new(),
            loops: Vec::new(),
            parent: None,
            root: id,
            live_children: 0,
            waiting_children: false,
            exit_notified: false,
            woken_remote: false,
            placed: false,
            on_rq: false,
            answer_to: None,
            pipe_retry: false,
            crossing_cycles: 0.0,
            recent_used_cpu: None,
            wakee_flips: 0,
            last_wakee: None,
            wakee_flip_decay_ns: 0,
            attrs: TaskAttrs::default(),
        }
    }
}

/// The most tasks a run may have alive at once, its workload's own, background kernel threads
/// and forked ones together. It bounds a fork bomb (a task that forks itself, an rt-app `fork`
/// loop): such a run stops with an error naming the task that forked past it, rather than
/// growing until memory runs out. Tasks that have exited do not count: a test suite's chain of
/// 3·10^5 short-lived processes runs (each exited task keeps a record of under 1 kB).
pub const MAX_TASKS: usize = 65_536;

/// The weight of a fair task at `nice` (clamped to -20..19): sched_prio_to_weight
/// (kernel/sched/core.c), 1024 at nice 0 and about 1.25 times less at each step up, so that a
/// task one nice level above another gets about 10% less of a CPU they share.
pub fn weight_of_nice(nice: i8) -> u64 {
    const WEIGHTS: [u64; 40] = [
        88761, 71755, 56483, 46273, 36291, // -20 .. -16
        29154, 23254, 18705, 14949, 11916, // -15 .. -11
        9548, 7620, 6100, 4904, 3906, // -10 .. -6
        3121, 2501, 1991, 1586, 1277, // -5 .. -1
        1024, 820, 655, 526, 423, // 0 .. 4
        335, 272, 215, 172, 137, // 5 .. 9
        110, 87, 70, 56, 45, // 10 .. 14
        36, 29, 23, 18, 15, // 15 .. 19
    ];
    WEIGHTS[(nice.clamp(-20, 19) + 20) as usize]
}

/// Scheduling attributes of a task.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskAttrs {
    /// CPUs the task may run on; None = all.
    pub affinity: Option<Rc<[usize]>>,
    pub policy: SchedPolicy,
    /// The nice value (-20..19): a fair task's weight ([`weight_of_nice`]); inherited by the
    /// tasks it forks.
    pub nice: i8,
    pub uclamp_min: Option<u32>,
    pub uclamp_max: Option<u32>,
    /// Added to every channel id the task's program names, so that one program can serve many
    /// pairs of tasks (client i and server i talk on their own channels).
    pub channel_base: u32,
    /// A kernel thread of the machine: it never ends, and a run whose benchmark tasks have all
    /// exited ends without waiting for it.
    pub background: bool,
    /// The task group it is in, by index (`sched/group.rs`): in a run with task groups (the
    /// `autogroup` knob) every task of the workload is in its session's group; inherited by
    /// the tasks it forks, left for a new one by `Op::Setsid`. None: the root's.
    pub group: Option<usize>,
}

/// A SCHED_IDLE task's weight (WEIGHT_IDLEPRIO), below nice 19's 15.
const WEIGHT_IDLEPRIO: u64 = 3;

impl TaskAttrs {
    /// The task's prio as the kernel's sched events print it: 99 − its priority for an RT
    /// task, 120 + its nice value for a fair one.
    pub fn kernel_prio(&self) -> i32 {
        match self.policy {
            SchedPolicy::Fifo(p) | SchedPolicy::Rr(p) => 99 - p as i32,
            SchedPolicy::Normal | SchedPolicy::Batch | SchedPolicy::Idle => 120 + self.nice.clamp(-20, 19) as i32,
        }
    }

    /// Its load weight (set_load_weight): its nice value's, or SCHED_IDLE's own.
    pub fn weight(&self) -> u64 {
        match self.policy {
            SchedPolicy::Idle => WEIGHT_IDLEPRIO,
            _ => weight_of_nice(self.nice),
        }
    }
}

impl SchedPolicy {
    /// The fair class's (SCHED_OTHER, BATCH, IDLE), not an RT one.
    pub fn is_fair(self) -> bool {
        matches!(self, SchedPolicy::Normal | SchedPolicy::Batch | SchedPolicy::Idle)
    }
}

/// check_preempt_wakeup's rules by policy, before the woken task is weighed against the
/// running one (check_preempt_wakeup, from 6.6 check_preempt_wakeup_fair): a running
/// SCHED_IDLE task is preempted by any other woken fair task (`Some(true)`); a woken
/// SCHED_BATCH or SCHED_IDLE task never preempts (`Some(false)`: the tick preempts them);
/// otherwise the class's rule decides (`None`).
pub fn preemption_by_policy(running: SchedPolicy, woken: SchedPolicy) -> Option<bool> {
    if running == SchedPolicy::Idle && woken != SchedPolicy::Idle {
        Some(true)
    } else if woken != SchedPolicy::Normal {
        Some(false)
    } else {
        None
    }
}

/// Scheduling class and priority.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SchedPolicy {
    /// The fair class's SCHED_OTHER, weighted by the task's nice value ([`TaskAttrs::nice`]).
    #[default]
    Normal,
    /// SCHED_BATCH: a fair task weighted by its nice value that never preempts by waking.
    Batch,
    /// SCHED_IDLE: a fair task of weight 3 whatever its nice value, which never preempts by
    /// waking and which any other fair task's wake-up preempts.
    Idle,
    /// SCHED_FIFO with priority 1..99: runs before every CFS task until it blocks.
    Fifo(u8),
    /// SCHED_RR with priority 1..99: like FIFO, round-robin among equals every 100 ms.
    Rr(u8),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_weights_fall_by_about_a_quarter_a_step_from_88761_to_15() {
        assert_eq!((weight_of_nice(-20), weight_of_nice(0), weight_of_nice(19)), (88761, 1024, 15));
        for nice in -20..19 {
            let step = weight_of_nice(nice) as f64 / weight_of_nice(nice + 1) as f64;
            assert!((1.2..1.3).contains(&step), "nice {nice} to {}: {step:.3}", nice + 1);
        }
        // Out of range is the nearest end.
        assert_eq!((weight_of_nice(-30), weight_of_nice(25)), (88761, 15));
    }

    #[test]
    fn a_measured_distribution_interpolates_its_quantiles_and_has_their_mean() {
        // Half the draws uniform in [0, 2], half in [2, 10]: mean 0.5 * 1 + 0.5 * 6 = 3.5.
        static Q: Quantiles = Quantiles(&[(0.0, 0.0), (0.5, 2.0), (1.0, 10.0)]);
        assert_eq!(Q.at(0.0), 0.0);
        assert_eq!(Q.at(0.25), 1.0);
        assert_eq!(Q.at(0.5), 2.0);
        assert_eq!(Q.at(0.75), 6.0);
        assert_eq!(Q.at(1.0), 10.0);
        assert!((Q.mean() - 3.5).abs() < 1e-12);
        let a = Amount::Measured(&Q, 2.0);
        assert!((a.mean() - 7.0).abs() < 1e-12);
        let mut rng = rand_pcg::Pcg64::new(1, 2);
        let draws: Vec<f64> = (0..40_000).map(|_| a.draw(&mut rng)).collect();
        assert!(draws.iter().all(|&d| (0.0..=20.0).contains(&d)));
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((mean - 7.0).abs() < 0.1, "{mean}");
    }

    // rt-app's timer event (src/rt-app.c, run_event, case rtapp_timer): t_next += period; sleep
    // until t_next only if now is before it; otherwise, in relative mode, t_next = now.

    #[test]
    fn a_timer_sleeps_until_a_release_still_ahead_in_either_mode() {
        for mode in [TimerMode::Relative, TimerMode::Absolute] {
            assert_eq!(mode.next_release(1_000, 10_000, 4_000), (11_000, true));
        }
    }

    #[test]
    fn a_late_relative_timer_goes_on_at_once_and_restarts_its_grid_at_now() {
        assert_eq!(TimerMode::Relative.next_release(1_000, 10_000, 25_000), (25_000, false));
    }

    #[test]
    fn a_late_absolute_timer_goes_on_at_once_and_keeps_its_grid() {
        // Two periods behind: this release and the next are both past, the task runs on.
        assert_eq!(TimerMode::Absolute.next_release(1_000, 10_000, 25_000), (11_000, false));
        assert_eq!(TimerMode::Absolute.next_release(11_000, 10_000, 25_000), (21_000, false));
        assert_eq!(TimerMode::Absolute.next_release(21_000, 10_000, 25_000), (31_000, true));
    }
}
