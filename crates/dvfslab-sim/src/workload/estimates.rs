//! Every estimated (\[EST\]) parameter of the workload models, in one place, each with its
//! source or the way to calibrate it. Models read them from here; the
//! validation work calibrates them here, never inside a model. \[CAL\] marks a value fitted to a
//! published measurement, with the procedure in docs/validation.md ("Calibrated constants");
//! \[REC\] one measured on a recording of the real benchmark (python/dvfslab/data/recordings/,
//! which `dvfslab model check` compares the model with).
//! "The first estimate" is the range estimated before calibration, from the published
//! per-operation costs; docs/workloads-net.md and docs/workloads-compute.md describe the models.
//!
//! Costs are in cycles at the platform's base frequency (work), or nanoseconds (device and
//! wall times), so that one number serves every machine.
//!
//! The costs that set the CPU time of the campaign's benchmarks are knobs of their workload
//! (`tbench:client_us=6`), declared here with their default, the range the true value is
//! believed to lie in and the reason for that range ([`Knob::uncertain`]), so that model
//! variants can be drawn across those ranges. A knob's work is microseconds (or nanoseconds per
//! byte) at the [`REF_HZ`] reference clock, turned into cycles by [`us_cycles`] and
//! [`ns_cycles`].

use crate::spec::Knob;

/// Cycles at [`REF_HZ`] of `us` microseconds of work. Dividing by 10^6 rounds once, as the
/// literal `5e-6` does, so that `us_cycles(5.0)` is `5e-6 * REF_HZ` to the last bit
/// (multiplying by `1e-6`, itself inexact, is not).
pub const fn us_cycles(us: f64) -> f64 {
    us / 1e6 * REF_HZ
}

/// Cycles at [`REF_HZ`] of `ns` nanoseconds of work (a cost per byte), as [`us_cycles`].
pub const fn ns_cycles(ns: f64) -> f64 {
    ns / 1e9 * REF_HZ
}

/// The kernel threads a benchmark's own activity drives (`workload::kthreads`).
pub mod kthreads {
    /// A kblockd worker's run for a small plugged request (`blk_mq_run_work_fn`: the
    /// request's dispatch to the driver and, on a KVM guest, the virtqueue kick that exits to
    /// the host): 23 µs at 2.6 GHz \[REC\], the gitsource recording's `kworker/N:NH` runs
    /// (3,106 in 5 s, all of them woken on their own CPU from process context, most by a task
    /// about to sleep in D, for discards of a few blocks), median 23 µs, quartiles 20 and 28 µs.
    pub const KBLOCKD_RUN_CYCLES: f64 = 23e-6 * 2.6e9;
    /// The range the worker's run is believed to lie in (µs at 2.6 GHz): the quartiles.
    pub const KBLOCKD_RUN_US_RANGE: (f64, f64) = (20.0, 28.0);
    /// A kblockd worker's run for a discard of a file of hundreds of KiB (gcc's temporary
    /// `.s`): 69 µs at 2.6 GHz \[REC\], the kernbench recording's `kworker/N:NH` runs (50 in
    /// the recording), median 69 µs, quartiles 54 and 79 µs.
    pub const KBLOCKD_LARGE_DISCARD_RUN_CYCLES: f64 = 69e-6 * 2.6e9;
    /// The range it is believed to lie in (µs at 2.6 GHz): the quartiles.
    pub const KBLOCKD_LARGE_DISCARD_RUN_US_RANGE: (f64, f64) = (54.0, 79.0);
    /// ext4's end-I/O worker's run per conversion a completed write queued
    /// (`ext4_end_io_rsv_work`: the written unwritten extents converted, the pages' writeback
    /// ended): 8 µs at 2.6 GHz \[REC\], the gitsource recording's unbound `kworker/u8:N` runs
    /// (971 with both ends in the trace, 1,299 wake-ups in 5 s, 1,288 of them from the block
    /// softirq on vCPU 1, which takes the virtio disk's interrupt), median 8 µs, quartiles 6
    /// and 12 µs: its writebacks have no waiter. A run that wakes a task waiting for the write
    /// is longer: in the dbench-2 recording the worker's runs that woke a client (182) have a
    /// median of 20 µs (p90 53), 115 of their 219 wake-ups going to the other, halted vCPU,
    /// and gitsource's 48 such runs 16 µs. The simulator charges the wake-up's IPI to a halted
    /// vCPU (`vcpu_wake.send_us`, 11 µs) and nothing else: its dbench worker's waking runs
    /// come out at 8 µs at the median, 19 at p90. What else a waking run does (ending the
    /// writeback of pages a task waits on) is not modelled.
    pub const END_IO_WORK_RUN_CYCLES: f64 = 8e-6 * 2.6e9;
    /// The range it is believed to lie in (µs at 2.6 GHz): the runs' p10 and p90.
    pub const END_IO_WORK_RUN_US_RANGE: (f64, f64) = (4.0, 18.0);
    /// RCU's grace-period kthread's run per wake-up (a grace period's start, scan or end):
    /// 4 µs at 2.6 GHz \[REC\], the median of `rcu_preempt`'s runs in the gitsource recording
    /// (895 in 5 s, every one woken from a softirq); kernbench's, 5 µs.
    pub const RCU_GP_RUN_CYCLES: f64 = 4e-6 * 2.6e9;
    /// The range it is believed to lie in (µs at 2.6 GHz): the two recordings' medians and
    /// their spread.
    pub const RCU_GP_RUN_US_RANGE: (f64, f64) = (3.0, 6.0);
    /// ksoftirqd's run for the softirqs a tick raised and a softirq that outlasted its time
    /// limit handed over (`run_ksoftirqd`; the scheduler's balancing softirq, mostly): 2 µs at
    /// 2.6 GHz \[REC\], the median of `ksoftirqd/N`'s runs in the netperf-tcp-rr and
    /// netperf-tcp-stream recordings (16 runs, 1 to 4 µs).
    pub const KSOFTIRQD_RUN_CYCLES: f64 = 2e-6 * 2.6e9;
    /// The range it is believed to lie in (µs at 2.6 GHz): the runs' extremes.
    pub const KSOFTIRQD_RUN_US_RANGE: (f64, f64) = (1.0, 4.0);
    /// ksoftirqd's lag (EEVDF's V − v, ns of vruntime) when a run first hands it work: what
    /// its life since boot left it. \[REC\] Read on the recordings' guest with
    /// `scripts/wakeup-lag` (BPF at `sched_wakeup`: its vruntime against the running task's)
    /// over a loopback TCP_RR run (`scripts/probes/tcp-rr-vcpus.c`): after an idle stretch
    /// ksoftirqd/0 and /1 woke 1.49 and 1.77 ms of vruntime left of the task they interrupted,
    /// their lags inflated twofold beside one task: 0.75 and 0.9 ms, left of it at 277 of 280
    /// wake-ups; after busier stretches 3.1 and 4.8 ms left, at 321 of 321. Why so far: woken on
    /// busy CPUs (a softirq that outlasted its limit), it runs a few µs and sleeps while the task
    /// it preempted is charged up to its switch, and a CPU-bound task it interrupts is charged
    /// more than it: each hand-over moves it left by the difference.
    pub const KSOFTIRQD_LAG_NS: i64 = 800_000;
    /// The range it is believed to lie in (ns of vruntime): half the placements seen.
    pub const KSOFTIRQD_LAG_NS_RANGE: (i64, i64) = (550_000, 3_000_000);
}

/// Kernel-side costs shared by many models (fork, exec, exit, wake-up), at a ~3–4 GHz reference.
pub mod kernel {
    use super::{us_cycles, Knob};
    /// fork(): 40–120 µs. A knob of gitsource, whose chain of short processes it paces.
    pub const FORK_US: Knob = Knob::new(
        "fork_us",
        "us",
        80.0,
        0.0,
        10_000.0,
        "fork() of a small process, charged to the parent, µs at 3 GHz",
    )
    .uncertain(40.0, 120.0, "estimate: fork() of a shell copies its page tables and mm, 40–120 µs at ~3 GHz");
    pub const FORK_CYCLES: f64 = us_cycles(FORK_US.default);
    /// execve after a vfork child's release, the dynamic linking and the first page faults of
    /// a small binary, the C library's CPUIDs apart ([`EXEC_STARTUP_CPUIDS`]): 100 µs at 3 GHz
    /// \[REC\], range 80–250. On the 2-vCPU guest, the children of a dash loop, each from its
    /// exec to its exit, medians of 1,000, less 68 CPUIDs at the preset's 6.8 µs (462 µs): a
    /// static `main(){return 0;}` 74 µs at 2.6 GHz, `/bin/true` (libc) 98 (85 at 3 GHz),
    /// `expr 1 + 1` 245 (gmp, its locale), `git --version` 382 (git's libraries and set-up).
    /// The value sits a little above `/bin/true`'s: the models' tools link more libraries. The
    /// first estimate, 400 µs, is about what an exec costs on that guest with its CPUID exits.
    /// A knob of gitsource.
    pub const EXEC_US: Knob = Knob::new(
        "exec_us",
        "us",
        100.0,
        0.0,
        100_000.0,
        "execve, dynamic linking and first page faults of a small binary, µs at 3 GHz",
    )
    .uncertain(
        80.0,
        250.0,
        "measured: the children of a dash loop on the 2-vCPU guest, exec to exit less the C library's CPUID \
         exits, 98 us at 2.6 GHz for /bin/true, 245 for expr, 382 for git --version (74 for a static binary)",
    );
    pub const EXEC_CYCLES: f64 = us_cycles(EXEC_US.default);
    /// CPUID instructions an exec'd program's C library runs as it starts \[REC\]: 68, counted
    /// by single-stepping a static and a dynamic `main(){return 0;}` built with Debian 12's
    /// glibc 2.36 on the recordings' guest (`scripts/probes/count-cpuid.c`): the CPU features
    /// (`init_cpu_features`) and the cache sizes walked through CPUID leaves 2 and 4
    /// (`handle_intel`, `intel_check_word`). Each traps to the hypervisor on a guest
    /// (`vm_exits.cpuid_us`, docs/platform-format.md); on bare metal they cost a few µs in
    /// all, which [`EXEC_US`] holds. Another C library or CPU runs another count.
    pub const EXEC_STARTUP_CPUIDS: f64 = 68.0;
    /// The CPU those CPUIDs took in every exec'd process of the recordings, at 2.6 GHz:
    /// `kvm-guest-2cpu`'s `vm_exits.cpuid_us` (6.8 µs) each, 1.2 M cycles. The models read
    /// a recorded process's own work as its CPU less this, its exec and its exit, and the
    /// simulator charges each exec the CPUIDs at the platform's cost: a bare-metal machine
    /// runs those processes without it.
    pub const RECORDED_STARTUP_CYCLES: f64 = EXEC_STARTUP_CPUIDS * 6.8e-6 * 2.6e9;
    /// exit + reap: 20–60 µs.
    pub const EXIT_CYCLES: f64 = 40e-6 * 3.0e9;
    /// The part of a vfork the parent still runs after its child is runnable: kernel_clone's
    /// tail from `wake_up_new_task` to the sleep in `wait_for_vfork_done`, 1.5 µs at 2.6 GHz
    /// \[SRC\] (range 1–2 µs): the kernbench and gitsource recordings, the parent's
    /// `sched_wakeup_new` to its switch-out in D, median 1 µs, p90 2 µs (timestamps in µs).
    /// Part of [`FORK_CYCLES`], not added to it. Small as it is, it decides who runs after
    /// the exec: see the models that vfork (kernbench, gitsource).
    pub const VFORK_TAIL_CYCLES: f64 = 1.5e-6 * 2.6e9;
    /// The part of a vfork the parent runs once its child's exec has released it: the return
    /// from `wait_for_vfork_done` and kernel_clone to user space, and a shell's code up to
    /// the wait4 it then sleeps in, 3 µs at 2.6 GHz \[REC\] (range 2–10 µs): the shells' runs
    /// from that wake-up to their switch-out in S, p10 2, p50 3, p90 3 µs over 3,272 in the
    /// gitsource recording, p10 3, p50 4, p90 10 over 202 in kernbench's. Part of the
    /// vfork's cost, not added to it. Without it the parent woken at the exec, which preempts
    /// the child, would sleep again in the same microsecond.
    pub const VFORK_RETURN_CYCLES: f64 = 3e-6 * 2.6e9;
    /// The part of a fork (not vfork) the parent still runs after its child is runnable: the
    /// rest of kernel_clone after `wake_up_new_task`, the return to user space and the
    /// parent's code up to the read or wait4 it blocks in, 10 µs at 2.6 GHz \[REC\] (range
    /// 8–17 µs): the gitsource recording, the shells' `sched_wakeup_new` of a forked child to
    /// their switch-out in S, p10 8, p50 10, p90 17 µs over 969 forks (git's own forks: 11 µs
    /// over 101). Part of [`FORK_CYCLES`], not added to it. Unlike a vfork parent, this one
    /// blocks in S with its child queued behind it, so it is the parent that a wake-up from
    /// the child finds ahead (gitsource's subshells).
    pub const FORK_TAIL_CYCLES: f64 = 10e-6 * 2.6e9;
    /// vfork() (`posix_spawn`, dash's and libiberty's `vfork`: CLONE_VM | CLONE_VFORK), charged
    /// to the parent: copy_process without the copy of the mm and its page tables that
    /// [`FORK_CYCLES`] pays for, 20 µs at 2.6 GHz \[EST\], range 10–36 µs: at most the kernbench
    /// recording's shortest make runs that end in one (from make's wake-up to its D sleep in
    /// `wait_for_vfork_done`, p10 36 µs, median 53 µs, make's own code included).
    pub const VFORK_CYCLES: f64 = 20e-6 * 2.6e9;
    /// The range it is believed to lie in (µs at 2.6 GHz).
    pub const VFORK_US_RANGE: (f64, f64) = (10.0, 36.0);
    /// The wakee switch count (`wakee_flips`) of the shell or harness that forks a
    /// benchmark's first process, which that process and its children inherit (fork copies it,
    /// nothing resets it; `Sim::start_task`): 2 \[REC\], range 1–3. On the recordings' guest
    /// (`scripts/probes/fork-wakee-flips.bt`), bash, sh and python3 had 2 or 3 at every fork
    /// of hackbench, and hackbench's parent 1–3 at its forks of the workers (it wakes others
    /// between them, and a count more than a second old is halved at its next wake-up). It
    /// matters while the workload's own wake-ups have not yet set the counts: `wake_wide`
    /// needs the wakee's count at 2 or more (the LLC's size) before it keeps a waker of many
    /// from pulling its wakees; a count of 0 made hackbench's receivers pull for its first
    /// 250 ms, moving one wake-up in 100 where the kernel moves one in 850 to 1,600.
    pub const LAUNCHER_WAKEE_FLIPS: u32 = 2;
    /// The range it is believed to lie in.
    pub const LAUNCHER_WAKEE_FLIPS_RANGE: (u32, u32) = (1, 3);
}

// --- network and IPC benchmarks (tbench, dbench, netperf, hackbench, pipe-test, pgbench,
// --- apache) ---

/// Pipes and unix-domain sockets (perf bench sched messaging / pipe), and
/// what all the network and IPC models share.
pub mod ipc {
    use crate::sched::task::CrossingCycles;

    /// How much of a syscall-heavy burst's time at base frequency is memory stall (network/IPC
    /// ≈ 0.1 \[EST\]). Calibrate by comparing a model's metric at two pinned
    /// frequencies with the real benchmark's.
    pub const MEM_FRAC: f64 = 0.1;
    /// A 100-byte pipe write including the wake-up of the reader: 1–2 µs (\[EST\]; the
    /// first estimate of a 100 B pipe/unix-socket write + wakeup was 1.5–3 µs). Calibrate with `perf bench
    /// sched pipe` pinned to one CPU at a fixed frequency (µs/loop ≈ 2·(write + read)).
    pub const PIPE_WRITE_CYCLES: f64 = 1.5e-6 * 3.0e9;
    /// A pipe read of one message: 3,200 cycles, 0.6–1.6 µs at 3 GHz (\[EST\]: the first
    /// estimate, 1.5 µs, less the switch into the reader it included, which the platform
    /// charges now: `sched_costs.switch_cycles`, 1,300 on every preset).
    pub const PIPE_READ_CYCLES: f64 = 3_200.0;
    /// A 100-byte `AF_UNIX` stream write: 2–3 µs (\[EST\]).
    pub const SOCKET_WRITE_CYCLES: f64 = 2.5e-6 * 3.0e9;
    /// An `AF_UNIX` stream read: 2–3 µs (\[EST\]).
    pub const SOCKET_READ_CYCLES: f64 = 2.5e-6 * 3.0e9;
    /// pthread_create of a minimal-stack thread: \[EST\] 15 µs (fork is `kernel::FORK_CYCLES`).
    pub const THREAD_CREATE_CYCLES: f64 = 15e-6 * 3.0e9;
    /// Thread exit: \[EST\] 10 µs (process exit is `kernel::EXIT_CYCLES`).
    pub const THREAD_EXIT_CYCLES: f64 = 10e-6 * 3.0e9;
    /// The parent's wait4 / pthread_join of one exited worker: \[EST\] 1 µs.
    pub const REAP_CYCLES: f64 = 1e-6 * 3.0e9;

    /// hackbench's sender per 100-byte message over a pipe: the write and its share of the
    /// reader wake-ups, 1,100 cycles; the switches and the cost of a wake-up from the other
    /// CPU are the platform's (`sched_costs`). \[REC\] Fitted so that the model's CPU per
    /// message on the guest's preset matches hackbench-pipe (rt-tests hackbench, 1 group, 2,000
    /// loops, the 2-CPU KVM guest at 2.6 GHz: 2,864 cycles a message, the median of six runs,
    /// 2,554–3,511; the model 2,926 at seed 0), in the first recording's split between senders
    /// (98.5 ms of the window) and receivers (89.0 ms). Range 900–1,500, as the runs spread.
    /// It holds whatever two vCPUs cost a pipe message, which the socket's costs keep apart
    /// ([`UNIX_SEND_CROSSING`]). On one vCPU of the same guest a message costs 800 cycles
    /// (681–965 over six runs of hackbench-pipe-1cpu's command; the shipped recording is an
    /// AMD host's, 2,071–3,060). Its cache lines explain little of the rest: the message's
    /// crossing costs 410 + 440 cycles by the threads' CPU time
    /// (`scripts/probes/message-crossing.c`), 85 + 74 timed inside the calls, and the pipe's
    /// shared lines 260 a write taken in turns (`message-turns.c`). With 390 and 400 here and
    /// the first two as crossing costs, the model's one-vCPU receivers sleep six times as
    /// often as recorded (0.27 a message against 0.045) and two vCPUs cost 1,800 cycles a
    /// message against the first recording's 3,511 (2,400 with 1,700 for the shared lines).
    /// Separate from [`PIPE_WRITE_CYCLES`], whose writes each wake a reader (`pipe-test`).
    pub const HACKBENCH_PIPE_SEND_CYCLES: f64 = 1_100.0;
    /// hackbench's receiver per message over a pipe: the read, 1,000 cycles. \[REC\] As the
    /// send. Range 820–1,360.
    pub const HACKBENCH_PIPE_RECV_CYCLES: f64 = 1_000.0;
    /// hackbench's sender per message over an `AF_UNIX` stream socket (an skb allocated,
    /// filled and queued, `sk_data_ready`) where nothing comes from another CPU's cache, 1,210
    /// cycles; what crossing CPUs adds is [`UNIX_SEND_CROSSING`]. \[REC\] Fitted to
    /// hackbench-socket-1cpu (the group on one vCPU of the 2-CPU KVM guest, Xeon host: 2,664
    /// cycles a message, 2,626–2,704 over six runs; the model 2,693), split as the probe splits
    /// a message (`scripts/probes/message-crossing.c`: 363 ns sending, 386 ns reading). Range
    /// 1,050–1,400.
    pub const HACKBENCH_SOCKET_SEND_CYCLES: f64 = 1_210.0;
    /// hackbench's receiver per message over an `AF_UNIX` stream socket (the skb dequeued,
    /// copied and freed, which charges the sender's buffer back) on the sender's CPU, 1,460
    /// cycles; [`UNIX_RECV_CROSSING`] more across. \[REC\] As the send. Range 1,250–1,650.
    pub const HACKBENCH_SOCKET_RECV_CYCLES: f64 = 1_460.0;
    /// What a 100-byte `AF_UNIX` stream message charges against its sender's `sk_wmem_alloc`:
    /// a head of 100 bytes aligned to 128 plus the 320-byte `skb_shared_info`, which kmalloc
    /// rounds to 512, less the shared info again, plus `struct sk_buff` (256) and the shared
    /// info (320): 768 bytes (`SKB_TRUESIZE` in `__alloc_skb`, x86-64 sizes) \[KNOW\].
    pub const UNIX_SKB_TRUESIZE_BYTES: u32 = 768;
    /// What an `AF_UNIX` stream send costs more where its cache lines come from another CPU
    /// (`sched/message_cpus.rs`). `message`, 1,150 cycles (the skb allocated from memory the
    /// reader freed on its CPU): \[REC\] `scripts/probes/message-crossing.c` on the 2-CPU KVM
    /// guest (Xeon host, 2.6 GHz): 200 messages sent, then read, pinned to one vCPU or to one
    /// each; the sender's CPU time per message 363 ns on one, 778–849 ns across. Timed inside
    /// the call alone (`scripts/probes/message-turns.c`, the TSC) the difference is 727 cycles:
    /// range 700–1,300. `shared`: [`UNIX_SHARED_LINES_CYCLES`].
    pub const UNIX_SEND_CROSSING: CrossingCycles = CrossingCycles { message: 1_150, shared: UNIX_SHARED_LINES_CYCLES };
    /// What an `AF_UNIX` stream receive costs more so. `message`, 1,560 cycles: \[REC\] as the
    /// send's, 386 ns on one vCPU, 964–1,016 ns across; 616 cycles timed inside the call:
    /// range 600–1,700.
    pub const UNIX_RECV_CROSSING: CrossingCycles = CrossingCycles { message: 1_560, shared: UNIX_SHARED_LINES_CYCLES };
    /// A unix socket's shared lines (its queue's lock and head, the wait queue, the charge)
    /// taken from the CPU that used the socket last: 480 cycles. \[REC\] Fitted, with the
    /// message's costs above and the local ones of [`HACKBENCH_SOCKET_SEND_CYCLES`], to
    /// hackbench-socket's 4,594 cycles a message on two vCPUs (the median of six runs,
    /// 4,281–4,977; the model 4,618 at seed 0, 4,166 without it), near what
    /// `scripts/probes/message-turns.c` times inside the call, 232–466 cycles a write for two
    /// writers taking turns from two vCPUs without sleeping (where the message's crossing
    /// also times at about half the thread CPU time): range 230–1,000.
    pub const UNIX_SHARED_LINES_CYCLES: u32 = 480;
}

/// The NBENCH loadfile that dbench and tbench replay.
pub mod nbench {
    /// Fallback operation mix, percent of loadfile lines (\[EST\],
    /// from typical full-`client.txt` dbench output counts). Replace with the counts of the
    /// real `client-tiny.txt` (lines 601–4173 of dbench's `loadfiles/client.txt`).
    pub const MIX_PCT: [(&str, f64); 14] = [
        ("ReadX", 27.0),
        ("NTCreateX", 18.0),
        ("Qpathinfo", 16.0),
        ("Close", 13.0),
        ("WriteX", 9.0),
        ("Find", 6.0),
        ("Unlink", 3.5),
        ("Qfsinfo", 3.0),
        ("Qfileinfo", 3.0),
        ("Sfileinfo", 1.4),
        ("Flush", 1.2),
        ("Rename", 0.7),
        ("LockX", 0.05),
        ("UnlockX", 0.05),
    ];
    /// ReadX return / WriteX sizes in bytes and their shares: \[EST\], chosen so the mean
    /// (≈ 13.6 KiB) puts 1-client tbench near the published 49 MB/s on a 1.4 GHz KNM core
    /// (Gherdovich 2020) and a few hundred MB/s on desktop cores. Replace with the real
    /// loadfile's sizes.
    pub const IO_SIZES: [(u32, f64); 4] = [(1024, 0.40), (4096, 0.30), (16384, 0.15), (65536, 0.15)];
    /// Characters in a file name (paths like `\clients\client1\~dmtmp\WORD\CHAP10.DOC`):
    /// \[EST\] 36. Request sizes grow by 2 bytes per character (\[SRC\] `sockio.c`).
    pub const NAME_CHARS: u32 = 36;
    /// Directory entries a Find returns: \[EST\] uniform 1..=20.
    pub const FIND_ENTRIES: (u32, u32) = (1, 20);
    /// The measured loadfile, `client-tiny.txt`: 3,573 lines (\[SRC\]).
    pub const LOADFILE_OPS: u32 = 3573;
}

/// A small message over loopback TCP, what tbench and netperf's TCP_RR share. \[REC\] From
/// the quiet recordings (python/dvfslab/data/recordings/; a 2-CPU KVM guest at a fixed 2.6 GHz,
/// Linux 6.18). netperf-tcp-rr keeps its two tasks on the two vCPUs: netserver, whose switches
/// the trace keeps, runs 4.5 µs (mean; 11,700 cycles) from its switch-in to its `sched_waking`
/// of netperf. The platform charges two parts of that on its own: the switch in
/// (`sched_costs.switch_cycles`, 1,300 on the guest) and the longer first run of a task woken
/// from another CPU (`sched_costs.remote_wake_us`, 2.2 µs = 5,720 cycles). The 4,680 cycles
/// left are one receive and one send up to the wake-up, split in the first estimate's 7 : 1.5
/// (only their sum matters to a request/response pair: both fall in one burst). What follows
/// the wake-up is measured where no IPI is sent: in tbench-2 and tbench-4, whose wake-ups stay
/// on the waker's CPU, 1.4–1.7 µs (means by role and CPU; 4,200 cycles) from a side's
/// `sched_waking` to its switch-out asleep. netperf's 12.5 µs there is that and the guest's
/// IPI to the other, halted vCPU (the preset's `vcpu_wake.send_us`). A side that wakes its
/// peer on its own CPU then costs 1,300 + 4,680 + 4,200 = 10,180 cycles a round trip, what
/// tbench's sides run besides its loadfile's copies and parsing (8,750–12,180 recorded).
/// Cycles, at any clock.
pub mod loopback {
    /// The send of a small message up to the receiver's wake-up: the send system call, TCP
    /// transmit and the loopback receive in the NET_RX softirq it raises on the sender's CPU.
    pub const TCP_SEND_CYCLES: f64 = 3_850.0;
    /// What follows the wake-up on the sender's CPU: the rest of the receive softirq, the
    /// send's return and the next receive call, up to where it blocks (or finds the answer
    /// already there). It holds the wake-up's own work, 1,080–1,390 cycles at 2.6 GHz
    /// (1,830–1,900 under the recorder; `scripts/probes/loopback-wake.c`), which a send whose
    /// receiver is not waiting skips: the model charges it on every send (docs/workloads-net.md,
    /// tbench's knife edge, says why).
    pub const TCP_WAKE_TAIL_CYCLES: f64 = 4_200.0;
    /// The receive of a message already queued: the receive call's copy-out path and return.
    pub const TCP_RECV_CYCLES: f64 = 830.0;
    /// Of what follows the wake-up, the part up to the send's return to user mode, the first
    /// point where a kernel without forced preemption (the recordings' PREEMPT_NONE) switches
    /// to a task the wake-up let preempt the sender: 1.16 and 1.21 µs (means; tbench-2 and
    /// tbench-4, 24,482 and 13,338 senders switched out runnable) from the sender's
    /// `sched_waking` to that switch.
    pub const TCP_WAKE_TO_RETURN_CYCLES: f64 = 3_080.0;
    /// Of that, the part after try_to_wake_up last updated the run-queue's clock, at its
    /// `sched_wakeup`: 0.62 µs (mean, both recordings). The switch skips the clock's update
    /// (rq_clock_skip_update), so this part is charged to the task switched in. What the
    /// accounting itself moves, read with `sched_stat_runtime` against the switches' times, is
    /// 0.36–0.41 µs (tbench, 2 clients); with that the model's tbench clients are almost always
    /// the ones preempted (docs/workloads-net.md, the knife edge); the trace's figure is kept.
    pub const TCP_WAKEUP_TO_RETURN_CYCLES: f64 = 1_610.0;
}

/// tbench: each loadfile operation is one request/response on loopback TCP. \[REC\] From
/// the quiet tbench-2 and tbench-4 recordings (python/dvfslab/data/recordings/; 2.6 GHz, Linux
/// 6.18; every pair on one CPU, no IPI), per operation as `dvfslab model check` counts them
/// (round trips in the traced window; tbench's untraced rate would give 11–15% more):
/// the client runs 10,940 and 12,180 cycles, tbench_srv 8,750 and 9,840 (four pairs on two
/// CPUs cost more than two: more switches, colder caches). The defaults are the two
/// recordings' mean, less the copies of the model's loadfile (4,630 bytes each side per
/// operation, 1,390 cycles at `COPY_NS_PER_BYTE`) and less the switch into each side once an
/// operation, which the platform charges (the guest's `sched_costs.switch_cycles`, 1,300);
/// the ranges span the two. The loaded recordings these replace (another job on the
/// machine) ran 1.4–1.6 times as many cycles per operation.
pub mod tbench {
    use super::Knob;
    /// Client side per operation besides the copies: the receive of the reply, the loadfile
    /// line and the send of the request over loopback TCP, with what follows the send's
    /// wake-up of the server ([`super::loopback`]).
    pub const CLIENT_US: Knob = Knob::new(
        "client_us",
        "us",
        2.96,
        0.0,
        1000.0,
        "client work per loadfile operation besides the copies (receive, loadfile line, send), µs at 3 GHz",
    )
    .uncertain(
        2.75,
        3.16,
        "recorded: the client's cycles per operation in the quiet tbench-2 and tbench-4 (10,940 and 12,180) less \
         1,390 of copies and a 1,300-cycle switch",
    );
    /// Server side per operation besides the copies (tbench_srv: receive the request, send
    /// the reply over loopback TCP).
    pub const SERVER_US: Knob = Knob::new(
        "server_us",
        "us",
        2.20,
        0.0,
        1000.0,
        "tbench_srv work per loadfile operation besides the copies (receive the request, send the reply), µs at 3 GHz",
    )
    .uncertain(
        2.02,
        2.38,
        "recorded: tbench_srv's cycles per operation in the quiet tbench-2 and tbench-4 (8,750 and 9,840) less \
         1,390 of copies and a 1,300-cycle switch",
    );
    /// Copy cost per byte moved, charged to each side for the bytes it sends or receives.
    pub const COPY_NS_PER_BYTE: Knob = Knob::new(
        "copy_ns_per_byte",
        "ns/byte",
        0.1,
        0.0,
        100.0,
        "copy cost of each byte a side sends or receives, ns at 3 GHz",
    )
    .uncertain(
        0.05,
        0.15,
        "estimate: about the loopback copy calibrated on the campaign's Haswell, 0.12 (docs/validation.md, \
         calibrated constants); the recordings' operations do not separate it from the fixed part",
    );
}

/// dbench (fileio backend, no -s/-S/-F, as MMTests' dbench4-async config).
pub mod dbench {
    use super::Knob;
    /// VFS cost of a metadata operation, by NBENCH operation: 2–10 µs (\[EST\];
    /// creates, renames and unlinks at the top, stat-like queries at the bottom). Calibrate
    /// against the per-operation AvgLat table of a 1-client dbench run at a pinned frequency.
    /// dbench4 scales them all by its knob [`METADATA_SCALE`].
    pub const METADATA_CYCLES: [(&str, f64); 12] = [
        ("NTCreateX", 8e-6 * 3.0e9),
        ("Close", 3e-6 * 3.0e9),
        ("Rename", 10e-6 * 3.0e9),
        ("Unlink", 8e-6 * 3.0e9),
        ("Qpathinfo", 4e-6 * 3.0e9),
        ("Qfileinfo", 2e-6 * 3.0e9),
        ("Qfsinfo", 3e-6 * 3.0e9),
        ("Find", 10e-6 * 3.0e9),
        ("Sfileinfo", 4e-6 * 3.0e9),
        ("Flush", 2e-6 * 3.0e9),
        ("LockX", 2e-6 * 3.0e9),
        ("UnlockX", 2e-6 * 3.0e9),
    ];
    /// The cost of metadata operation `name` in [`METADATA_CYCLES`], for other models' constants
    /// that take dbench's figure; a name the table lacks fails the build.
    pub const fn metadata_cycles(name: &str) -> f64 {
        let mut i = 0;
        while i < METADATA_CYCLES.len() {
            if same_name(METADATA_CYCLES[i].0, name) {
                return METADATA_CYCLES[i].1;
            }
            i += 1;
        }
        panic!("estimates::dbench::METADATA_CYCLES has no such operation")
    }

    /// `a == b` for `const fn` (string comparison is not const).
    const fn same_name(a: &str, b: &str) -> bool {
        let (a, b) = (a.as_bytes(), b.as_bytes());
        if a.len() != b.len() {
            return false;
        }
        let mut i = 0;
        while i < a.len() {
            if a[i] != b[i] {
                return false;
            }
            i += 1;
        }
        true
    }

    /// A factor on every [`METADATA_CYCLES`] cost, a knob of dbench4: the costs are one
    /// estimate, uncertain together.
    pub const METADATA_SCALE: Knob = Knob::new(
        "metadata_scale",
        "x",
        1.0,
        0.0,
        100.0,
        "factor on the VFS work of every metadata operation (2–10 µs each at 3 GHz)",
    )
    .uncertain(
        0.5,
        2.0,
        "estimate: a create, unlink or rename on XFS 8–10 µs, a stat-like query 2–4 µs at ~3 GHz; not \
         calibrated (the AvgLat table of a 1-client dbench run at a pinned frequency would)",
    );

    /// ReadX / WriteX: 1 µs + 0.3 ns per byte through the page cache (\[EST\]).
    pub const IO_US: Knob =
        Knob::new("io_us", "us", 1.0, 0.0, 1000.0, "VFS work of a ReadX or WriteX besides its copy, µs at 3 GHz")
            .uncertain(0.5, 2.0, "estimate: a buffered read() or write() system call on a cached file, about 1 µs");
    pub const IO_NS_PER_BYTE: Knob = Knob::new(
        "io_ns_per_byte",
        "ns/byte",
        0.3,
        0.0,
        100.0,
        "copy between the page cache and the client's buffer per byte, ns at 3 GHz",
    )
    .uncertain(
        0.12,
        0.5,
        "estimate: from the user-space copy measured on the campaign's Haswell (0.12 ns/byte, \
         docs/validation.md, netperf) to twice the page cache's 0.25 ns/byte estimate",
    );

    /// The operations that change metadata, each an XFS transaction whose changes go to the
    /// log (the others read, or dirty the page cache only).
    pub const LOGGED_OPS: [&str; 4] = ["NTCreateX", "Unlink", "Rename", "Sfileinfo"];
    /// Log space a transaction's changes take: 1 KiB \[CAL\] (an inode core, a directory
    /// block's changed range, an allocation-group header, each with its log headers). With
    /// the 10 MiB log, the passes of the 5.5-rc7 runs on an 8-CPU machine (LKML, commit
    /// 52262ee567ad) peak at 8–32 clients, so the log stops holding every client's last pass
    /// near 12 clients: 10 MiB / 12 clients / 843 transactions a pass ≈ 1 KiB.
    pub const LOGGED_KIB: Knob =
        Knob::new("logged_kib", "KiB", 1.0, 0.01, 1024.0, "XFS log space one metadata transaction takes").uncertain(
            0.4,
            1.5,
            "calibrated: Linux 5.5-rc7 dbench4 passes on an 8-CPU machine peak at 8–32 clients (LKML, commit \
         52262ee567ad), so the 10 MiB log holds every client's pass up to 8–32 clients: 1.5–0.4 KiB a \
         transaction (docs/validation.md, calibrated constants)",
        );
    /// xfsaild's time to write back one transaction's changes in place, serially: 10.8 µs
    /// \[CAL\] on the same runs' 64-client passes, 469 ms on the 8-CPU machine and 479 ms on the
    /// 48-CPU one, whatever their CPUs and disks (the model gives 463 and 460 ms).
    pub const WRITEBACK_US: Knob = Knob::new(
        "writeback_us",
        "us",
        10.8,
        0.0,
        10_000.0,
        "xfsaild's time to write one transaction's changes back in place, freeing its log space",
    )
    .uncertain(
        10.0,
        12.0,
        "calibrated: the 64-client dbench4 passes of Linux 5.5-rc7, 469 ms on an 8-CPU machine and 479 ms on \
         a 48-CPU one (LKML, commit 52262ee567ad; docs/validation.md, calibrated constants)",
    );
}

/// dbench on ext4 without a journal, mounted with `discard` (`dbench4:fs=ext4-nojournal`; the
/// recordings machine's root filesystem). What a Flush and an Unlink wait for, counted by
/// replaying dbench's own `client.txt` (its 458,344 lines: 5,553 Flushes, 16,000 Unlinks)
/// through the rules of `ext4_fsync_nojournal` and of freeing blocks without a journal
/// (\[SRC\], Linux 6.18 fs/ext4/fsync.c and mballoc.c): an fsync writes the file's dirty data
/// and waits for it, then its inode's table block, then, for a file created since its last
/// fsync, its directory's block and the directory's inode (`ext4_sync_parent`), then flushes
/// the device's cache; freeing blocks issues a discard and waits for it (`ext4_mb_clear_bb`).
/// The counts predict 0.053 waits per loadfile operation, 11% of them ended by the end-I/O
/// worker; the dbench-2 recording has 0.050 D sleeps per operation, 12% woken by a kworker.
pub mod dbench_ext4 {
    use super::us_cycles;
    /// Share of Flushes whose file has data past its allocated blocks: delayed allocation
    /// with `dioread_nolock` allocates unwritten extents, converted at the I/O's end in the
    /// `ext4-rsv-conversion` workqueue, whose worker ends the pages' writeback (\[SRC\] 2,711 of
    /// the 5,553 Flushes of `client.txt`).
    pub const FLUSH_NEW_BLOCKS_SHARE: f64 = 0.488;
    /// Share of Flushes whose file was created since its last fsync: its directory's block is
    /// written and waited for (\[SRC\] 2,717 of 5,553) ...
    pub const FLUSH_NEW_ENTRY_SHARE: f64 = 0.489;
    /// ... and then the directory's inode, unless an earlier fsync wrote it since it last
    /// changed (\[SRC\] 2,326 of 5,553).
    pub const FLUSH_DIR_INODE_SHARE: f64 = 0.419;
    /// Share of Unlinks of a file with blocks on disk (written by an fsync), whose freeing
    /// issues a discard and waits for it (\[SRC\] 2,710 of 16,000; a file whose data never
    /// left the page cache has no blocks).
    pub const UNLINK_DISCARD_SHARE: f64 = 0.169;
    /// The fsync's work before each metadata block's wait (the inode's or directory's table
    /// block: `sync_dirty_buffer`, the request's submission, the virtqueue kick) \[SRC\]: a
    /// client's run between two D sleeps lasts 19 µs at the median over the first host's six
    /// `dbench 2` recordings (each run's median 19–25 µs; on a KVM guest the kick exits to the
    /// host), of which the model charges about 3 µs apart: the switch
    /// (`sched_costs.switch_cycles`) and the wake-up from the other vCPU's completion
    /// (`sched_costs.remote_wake_us`). So 16 µs at 2.6 GHz (12–22 µs).
    pub const META_SUBMIT_CYCLES: f64 = 16e-6 * 2.6e9;
    /// The fsync's work before its cache flush (`blkdev_issue_flush`): 4.3 µs at 3 GHz
    /// \[SRC\], the recording's median run before the fsync's last wait, 5 µs at 2.6 GHz.
    pub const FLUSH_SUBMIT_CYCLES: f64 = 5e-6 * 2.6e9;
    /// An fsync's own work besides its waits and the submissions above (the fsync call,
    /// writepages building the data's bio): 25 µs at 3 GHz \[EST\] (10–60 µs): the recording's
    /// Flushes take 381 µs each (dbench's AvgLat), of which ~4 device waits of ~50 µs with
    /// their wake-ups and the submissions above.
    pub const FSYNC_CYCLES: f64 = us_cycles(25.0);

    /// Cycles of `us` microseconds on the recordings machine (a 2.6 GHz Xeon, Linux 6.18).
    const fn at_2_6_ghz(us: f64) -> f64 {
        us * 2.6e3
    }

    /// VFS cost of a metadata operation on ext4, by NBENCH operation \[SRC\]: the mean latency
    /// dbench printed for it (its AvgLat table, µs), the median over the six `dbench 2` runs of
    /// the first recordings host (the dbench-2 recording and its five repeats, each log in
    /// `data/recordings`: Linux 6.18, a 2.6 GHz Xeon guest whose clients never wait for a CPU;
    /// dbench-2-b, the second host's, is left out to check against), as cycles at 2.6 GHz. The
    /// runs differ by up to 1.4× (their mean latency over the non-Flush operations 3.5–4.9
    /// µs, dbench-2's own the highest); each operation's median keeps one run's noise out. The
    /// tables have a resolution of 1 µs: an operation printed "0.000" in some runs and "0.001"
    /// in others (Close), or always "0.000" (Qfileinfo), is taken as 0.5 µs. Unlink's 26 µs
    /// less the discards that 17% of them wait for (~65 µs each with the wake-up); Flush's own
    /// call only (its writeback and waits are [`FSYNC_CYCLES`] and the waits). Over the
    /// loadfile's mix they are 0.66 of the XFS estimates (`dbench::METADATA_CYCLES`). Scaled by
    /// dbench4's knob `metadata_scale`.
    pub const METADATA_CYCLES: [(&str, f64); 12] = [
        ("NTCreateX", at_2_6_ghz(6.5)),
        ("Close", at_2_6_ghz(0.5)),
        ("Rename", at_2_6_ghz(11.5)),
        ("Unlink", at_2_6_ghz(15.0)),
        ("Qpathinfo", at_2_6_ghz(2.5)),
        ("Qfileinfo", at_2_6_ghz(0.5)),
        ("Qfsinfo", at_2_6_ghz(1.0)),
        ("Find", at_2_6_ghz(8.0)),
        ("Sfileinfo", at_2_6_ghz(2.0)),
        ("Flush", at_2_6_ghz(2.0)),
        ("LockX", at_2_6_ghz(2.0)),
        ("UnlockX", at_2_6_ghz(1.0)),
    ];
    /// ReadX and WriteX on ext4 \[SRC\]: 1 µs at 2.6 GHz each besides the copy, and per byte
    /// what the same runs' median AvgLat leaves over the loadfile's mean sizes (`client.txt`:
    /// a ReadX 2 µs for 11.9 KB, 0.084 ns a byte; a WriteX 6 µs for 25.7 KB, 0.19 ns a byte,
    /// 6–8 µs over the runs: dbench writes a freshly zeroed buffer, and the page cache
    /// allocates and reserves).
    pub const IO_CYCLES: f64 = at_2_6_ghz(1.0);
    pub const READ_CYCLES_PER_BYTE: f64 = at_2_6_ghz(0.084e-3);
    pub const WRITE_CYCLES_PER_BYTE: f64 = at_2_6_ghz(0.195e-3);
}

/// netperf over loopback. TCP_RR's costs are [`loopback`]'s, recorded.
pub mod netperf {
    use super::Knob;
    /// UDP send: no connection state or ACK. \[CAL\] With the softirq below, 2.59 µs per
    /// datagram and `COPY_NS_PER_BYTE`: the sender's time per datagram on the campaign's
    /// own Haswell (2 × E5-2670 v3, Linux 5.5, the saturated sender at its 3.1 GHz turbo) in
    /// Mel Gorman's UDP_STREAM runs (LKML, "ACPI _CST introduced performance regresions on
    /// Haswll", October 2020): 193–203 Mbit/s at 64 bytes, 2,994–3,060 at 1,024 and
    /// 28,540–29,190 at 16,384, every size's received rate equal to the sent one. A line
    /// through the three sizes gives 2.59 µs + 0.12 ns/byte; split between the send and the
    /// softirq in the first estimate's 3 : 2 (its 3 and 2 µs ran half as fast). Both run on the
    /// sender's CPU, so only their sum matters; each knob's range is the sum's.
    pub const UDP_SEND_US: Knob =
        Knob::new("udp_send_us", "us", 1.55, 0.0, 1000.0, "UDP sendto of a datagram besides its copy, µs at 3 GHz")
            .uncertain(1.4, 1.7, UDP_SENDER_SOURCE);
    /// UDP loopback receive softirq, charged to the sending CPU: \[CAL\] see `UDP_SEND_US`.
    pub const UDP_SOFTIRQ_US: Knob = Knob::new(
        "udp_softirq_us",
        "us",
        1.04,
        0.0,
        1000.0,
        "loopback receive softirq of a UDP datagram, on the sender's CPU, µs at 3 GHz",
    )
    .uncertain(0.94, 1.14, UDP_SENDER_SOURCE);
    /// The calibration of the UDP sender's costs, and their range: ±10%, for the sender's clock
    /// (taken as the 3.1 GHz single-core turbo) and the 3 : 2 split.
    const UDP_SENDER_SOURCE: &str = "calibrated: Mel Gorman's UDP_STREAM runs on a 2 × E5-2670 v3 at Linux 5.5 \
        (LKML, October 2020) put the sender at 2.59 µs + 0.12 ns/byte per datagram, split 3 : 2 between the send \
        and the softirq; ±10% for the turbo clock assumed (docs/validation.md, calibrated constants)";
    /// UDP recvfrom: \[EST\] 1 µs.
    pub const UDP_RECV_US: Knob =
        Knob::new("udp_recv_us", "us", 1.0, 0.0, 1000.0, "UDP recvfrom of a datagram besides its copy, µs at 3 GHz")
            .uncertain(
                0.5,
                2.0,
                "estimate: a recvfrom system call, about 1 µs; the Haswell runs lost no datagram, so the \
                 receiver kept up with a 2.59 µs sender (docs/validation.md, calibrated constants)",
            );
    /// UDP_RR: the part of a side's send and receive that follows its wake-up of the other
    /// side, out of their calibrated sum: the rest of the receive softirq, the send's return
    /// and the recvfrom call up to where it blocks. \[EST\] 0.8 µs at 3 GHz: TCP's measured
    /// 1.6 µs at 2.6 GHz (`loopback::TCP_WAKE_TAIL_CYCLES`) less the ACK processing UDP does
    /// not do, taken as half of it.
    pub const UDP_WAKE_TAIL_CYCLES: f64 = 0.8e-6 * 3.0e9;
    /// Copy per byte, each side (`copy_from_user` on the sender, `copy_to_user` on the
    /// receiver, of TCP and UDP alike): \[CAL\] 0.12 ns/byte, the slope of the Haswell sender's
    /// time per datagram over the sizes (`UDP_SEND_US`); the first estimate was 0.25–0.4.
    pub const COPY_NS_PER_BYTE: Knob = Knob::new(
        "copy_ns_per_byte",
        "ns/byte",
        0.12,
        0.0,
        100.0,
        "copy to or from user space per byte, each side, ns at 3 GHz",
    )
    .uncertain(
        0.1,
        0.14,
        "calibrated: the slope of the UDP_STREAM sender's time per datagram over 64, 1,024 and 16,384 bytes on a \
         2 × E5-2670 v3 (Mel Gorman, LKML, October 2020; docs/validation.md, calibrated constants)",
    );
    /// TCP_STREAM per send call: \[CAL\] 0.78 µs, with `STREAM_SEGMENT_CYCLES_PER_BYTE` and the
    /// copy, the sender's time per send on the campaign's own Haswell (2 × E5-2670 v3, Linux
    /// 5.5-rc1, the saturated sender at its 3.1 GHz turbo) in Mel Gorman's netperf-tcp runs
    /// (LKML, "sched, fair: Allow a small degree of load imbalance between SD_NUMA domains",
    /// December 2019, the baseline kernel): 667 Mbit/s at 64 bytes, 8,124 at 1,024 and 30,063
    /// at 16,384 (nine sizes). A line through the nine gives 0.78 µs + 0.21 ns/byte; the first
    /// estimate was 2–4 µs, too dear for a send that mostly appends to a corked segment.
    pub const STREAM_SEND_US: Knob = Knob::new(
        "stream_send_us",
        "us",
        0.78,
        0.0,
        1000.0,
        "TCP_STREAM send call besides its copy and segments, µs at 3 GHz",
    )
    .uncertain(0.7, 0.86, TCP_SENDER_SOURCE);
    /// TCP_STREAM's loopback segments (up to 64 KiB each), transmitted and received in the
    /// sender's softirq, per byte: \[CAL\] 0.09 ns/byte, the slope of `STREAM_SEND_US`'s
    /// line less the copy (`COPY_NS_PER_BYTE`).
    pub const STREAM_SEGMENT_NS_PER_BYTE: Knob = Knob::new(
        "stream_segment_ns_per_byte",
        "ns/byte",
        0.09,
        0.0,
        100.0,
        "TCP_STREAM loopback segments' transmit and receive per byte, on the sender's CPU, ns at 3 GHz",
    )
    .uncertain(0.07, 0.11, TCP_SENDER_SOURCE);
    /// The calibration of the TCP_STREAM sender's costs, and their range: ±10%, the sizes'
    /// spread about the line and the sender's clock.
    const TCP_SENDER_SOURCE: &str = "calibrated: Mel Gorman's netperf-tcp runs on a 2 × E5-2670 v3 at Linux \
        5.5-rc1 (LKML, December 2019) put the sender at 0.78 µs + 0.21 ns/byte per send, less the 0.12 ns/byte \
        copy; ±10% for the sizes' spread about that line (up to 6%) and the turbo clock assumed \
        (docs/validation.md, calibrated constants)";
    /// TCP_STREAM per recv call on the receiver (MMTests passes `-M` = the send size, so one
    /// message per call): \[EST\] 0.6 µs, a system call and `tcp_recvmsg` taking what is queued,
    /// about the cost of the send's fixed part. The first estimate's 1.5 µs would cap the receiver at 340
    /// Mbit/s at 64 bytes, half the measured rate.
    pub const STREAM_RECV_US: Knob =
        Knob::new("stream_recv_us", "us", 0.6, 0.0, 1000.0, "TCP_STREAM recv call besides its copy, µs at 3 GHz")
            .uncertain(
                0.4,
                0.75,
                "estimate: a recv system call taking what is queued, about the send's fixed part; above ~0.75 µs the \
         receiver could not keep up with the 667 Mbit/s measured at 64 bytes (docs/validation.md, calibrated \
         constants)",
            );
    /// TCP_STREAM bytes in flight before the sender blocks, at most `STREAM_MAX_INFLIGHT_MSGS`
    /// messages: \[EST\] 256 KiB. Linux auto-tunes the socket buffers behind it between 128
    /// KiB and 6 MiB (`tcp_rmem`, `tcp_wmem`); a loopback sender that outruns its receiver
    /// finds it larger (the recording guest's, which never waits, has over 400 KB queued at
    /// each of the receiver's wake-ups).
    pub const STREAM_WINDOW_KB: Knob = Knob::new(
        "window_kb",
        "KiB",
        256.0,
        1.0,
        65536.0,
        "TCP_STREAM bytes in flight before the sender waits for the receiver",
    )
    .integer();
    pub const STREAM_MAX_INFLIGHT_MSGS: u32 = 4096;
    /// UDP_STREAM receive buffer: `net.core.rmem_default`, 212,992 bytes of truesize. The
    /// MMTests of 2019 (`netperf-bench`) passes socket sizes only to a remote server's test
    /// (`-s 851968 -S 851968` for UDP_STREAM), so a loopback run keeps the default \[SRC\]; its
    /// versions of 2012–2015 passed `-s 32768 -S 32768`, which Linux would double to 65,536.
    pub const UDP_RCVBUF_BYTES: u32 = 212_992;
    /// Bytes a datagram's buffer holds beside its payload: headroom (64), Ethernet, IP and UDP
    /// headers (42) and the trailing `skb_shared_info` (320) [EST, x86-64 sizes].
    pub const SKB_DATA_OVERHEAD_BYTES: u32 = 426;
    /// `struct sk_buff` itself, as counted in truesize \[EST\].
    pub const SKB_STRUCT_BYTES: u32 = 256;

    /// What a received datagram of `payload` bytes is charged against the socket's receive
    /// buffer: its data buffer, rounded up to the allocator's power-of-two size, plus the
    /// `sk_buff` (768 bytes for 64, 2,304 for 1,024, 33,024 for 16,384).
    pub fn skb_truesize(payload: u32) -> u32 {
        (payload + SKB_DATA_OVERHEAD_BYTES).next_power_of_two() + SKB_STRUCT_BYTES
    }
}

/// pgbench against a local PostgreSQL. \[REC\] marks a value measured on the recordings
/// `pgbench-select` and `pgbench-rw` (PostgreSQL 15, 2 clients, 2 threads, scale 10, on the
/// 2-CPU KVM guest at 2.6 GHz with tracing on; docs/recording.md): CPU time between the trace's
/// wake-ups and switches, the idle CPU's missing switch-ins taken at the task's wake-up there,
/// per transaction counted in the trace (a client wake-up per statement). A µs figure below
/// is at 3 GHz ([`us_cycles`]): the recorded µs at 2.6 GHz times 2.6 / 3. The recordings'
/// costs hold a hypervisor's share (a cross-CPU wake-up is an IPI, a VM exit) and the tracing's,
/// which a bare machine does without: the ranges reach down to the first estimates.
pub mod pgbench {
    use super::{us_cycles, Knob};
    /// select-only: the backend's work on its SELECT of a random account (parse, plan, an
    /// index scan and a heap fetch, the buffer misses of a database larger than
    /// `shared_buffers` included), less the protocol work every statement has
    /// ([`BACKEND_QUERY_CYCLES`], and the 15.4 µs at 2.6 GHz from the reply to the backend's sleep,
    /// most of it the kick of a halted vCPU; [`BACKEND_IDLE_CYCLES`]).
    pub const SELECT_US: Knob = Knob::new(
        "select_us",
        "us",
        40.0,
        0.0,
        10_000.0,
        "backend work of a select-only transaction's SELECT (parse, plan, execute), µs at 3 GHz",
    )
    .uncertain(
        15.0,
        50.0,
        "recording pgbench-select: the backends ran 74 µs at 2.6 GHz per transaction on a Xeon host (rows read \
         from disk included), 66 µs (median of five runs) on an AMD EPYC host, 28 of them protocol work and the \
         reply's wake-up; the first estimate was 15–40 µs, and sweeps against the campaign kept 25 before the protocol \
         work was a cost of its own (docs/validation.md, calibrated constants)",
    );
    /// tpcb-like statements' own work (BEGIN, UPDATE accounts, SELECT, UPDATE tellers,
    /// UPDATE branches, INSERT history, END), scaled together by the [`RW_SCALE`] knob.
    /// \[REC\] pgbench-rw's five repeats: the backend's CPU from its thread's wake-up of it to
    /// its wake-up of the thread (the reply), in the transactions whose seven statements each
    /// woke the backend, the runs' medians of the means 16.3, 69.7, 41.6, 40.3, 35.3, 31.2 and
    /// 74.8 µs at 2.6 GHz (each within 15% over the five). BEGIN is the protocol work and the
    /// reply's wake-up alone; each other statement's own work is set so that the same measure
    /// on the model's trace gives the recorded one (68.6, 42.1, 44.0, 38.8, 34.5, 79.5 µs; its
    /// BEGIN 20.6). The costs first read from the first recording, whose backends' vCPU lost its
    /// switches from idle (taken at the backend's wake-up there), were 1.5–2 times these (27,
    /// 132, 60, 61, 55, 49 and 121 µs); this measure on that run, blind to the runs those lost
    /// switches began, gives 16.1, 74.7, 38.1, 35.3, 32.6, 27.8 and 67.1. The UPDATE of the account reads
    /// the row the SELECT after it finds in cache; END's work is split around the WAL flush
    /// ([`END_BEFORE_FLUSH`], [`END_BETWEEN_IOS`]).
    pub const RW_STATEMENT_CYCLES: [f64; 7] =
        [0.0, us_cycles(53.5), us_cycles(19.8), us_cycles(22.9), us_cycles(18.7), us_cycles(15.8), us_cycles(51.5)];
    /// Shares of END's work before the WAL flush (inserting the commit record, `XLogWrite`'s
    /// write, `fdatasync`'s way to the device) and between its two I/Os (the cache flush's
    /// submission); the rest follows the flush (the locks' release). \[REC\] pgbench-rw, the
    /// commits with two I/Os: 59, 6 and 11 µs median CPU before, between and after them.
    pub const END_BEFORE_FLUSH: f64 = 0.7;
    pub const END_BETWEEN_IOS: f64 = 0.1;
    /// Backend protocol work of every statement before its reply: the query's recv, the
    /// message's parse, the transaction command's start and end, the reply's send. \[REC\]
    /// pgbench-rw: BEGIN's 27 µs at 2.6 GHz less the 14.5 µs from its reply to the backend's
    /// sleep, 11 µs at 3 GHz; range 5–15 µs.
    pub const BACKEND_QUERY_CYCLES: f64 = us_cycles(11.0);
    /// Backend work from sending a reply to sleeping for the next query (ReadyForQuery's flush
    /// done, the process title and statistics updated, a recv that finds nothing, epoll_wait).
    /// \[REC\] both recordings: 2–3 µs median (2.6–3.5 mean) at 2.6 GHz from the reply's wake-up
    /// of the thread to the backend's sleep when the thread was woken onto the backend's own
    /// CPU, 2.6 µs at 3 GHz; range 1–5 µs. A reply that woke the thread onto the other vCPU
    /// while it was halted kept the backend 18 µs instead: the hypervisor's kick of a halted
    /// vCPU, a cost of the machine, not of PostgreSQL, which the model leaves out.
    pub const BACKEND_IDLE_CYCLES: f64 = us_cycles(2.6);
    /// pgbench thread work per statement (read and check the reply, build and send the next
    /// statement, poll): 14 µs at 3 GHz. \[REC\] the thread's CPU per statement, at the
    /// recordings' 2.6 GHz: pgbench-select on an AMD EPYC host, five runs on a fresh database,
    /// 35,200–61,100 cycles (median 47,200, 15.7 µs at 3 GHz); pgbench-select and pgbench-rw on
    /// a Xeon host, 44,800 and 39,000 (15.0 and 13.0 µs). The model adds the switches' costs
    /// (`sched_costs`) to it, about 1,300 cycles a statement, and in a layout whose wake-ups
    /// cross vCPUs the IPIs they send (`vcpu_wake`), which the Xeon's read-write threads paid
    /// within their 13 µs: that host ran more work per cycle of the guest's clock. A shared
    /// host's speed moves the cycles of both sides from day to day; their ratio held: the
    /// thread's CPU was 0.25–0.28 of its backend's in each of the five runs (the model's 0.27
    /// at 14 µs, 0.17 at the 9 µs estimated before). The runs whose pairs shared a vCPU cost
    /// the most (44,400–61,100); the one whose wake-ups crossed vCPUs half the time 35,200
    /// (11.7 µs). Sharing a CPU's caches is not why: on one AMD host on one day, the postmaster
    /// and pgbench pinned, a thread's CPU per statement was 10.0 µs (select-only) and 12.3
    /// (tpcb-like) with each pair on one vCPU, 13.5 and 21.0 with the pairs' sides on different
    /// vCPUs, IPIs included; the same host type ran select-only 2.3 times as fast as the day
    /// pgbench-select was recorded. The statement does not set the thread's cost; the host and
    /// the day do (docs/recording.md), and the pgbench-rw recording's manifest gives its Xeon
    /// host's own, 3.6 µs, read from the thread's runs that send no IPI. The intel-invariance
    /// campaign fits 8 µs on its bare-metal machines' pgbench cells (among 3, 5 and 8;
    /// docs/validation.md, calibrated constants), below the guests' 13–16 µs: a gap no
    /// mechanism of the model explains yet.
    pub const CLIENT_US: Knob = Knob::new(
        "client_us",
        "us",
        14.0,
        0.0,
        10_000.0,
        "pgbench thread work per statement (read the reply, send the next, poll), µs at 3 GHz",
    )
    .uncertain(
        3.0,
        18.0,
        "recordings pgbench-select (AMD EPYC guest, five runs: 11.7-20.3 us, median 15.7), pgbench-rw-1cpu and \
         -flat (the same host, twelve runs: 11.7 from their CPU per transaction) and pgbench-select, pgbench-rw (Xeon \
         guest: 15.0, 13.0 us) at 3 GHz; the intel-invariance campaign fits 8 (of 3-8) on bare-metal Xeons' watts \
         (docs/validation.md, calibrated constants)",
    );
    /// The share of the thread's work per statement before it sends the next statement; the
    /// rest (checking the other connections, ppoll) follows the send. \[REC\] the Xeon host's
    /// pgbench-select and pgbench-rw at 2.6 GHz, where the backend was woken onto the thread's own
    /// CPU: 7.3–8.5 µs from the thread's switch-in to its wake-up of the backend, 2–4 µs from
    /// there to its sleep.
    pub const CLIENT_BEFORE_SEND: f64 = 0.75;
    /// A factor on every [`RW_STATEMENT_CYCLES`] cost, a knob of pgbench: one estimate,
    /// uncertain together.
    pub const RW_SCALE: Knob = Knob::new(
        "rw_scale",
        "x",
        1.0,
        0.0,
        100.0,
        "factor on the backend work of the tpcb-like statements (0–54 µs each at 3 GHz)",
    )
    .uncertain(
        0.4,
        1.5,
        "recording pgbench-rw's repeats (a KVM guest with tracing on) at 1, each statement within 15% over the \
         five runs; pgbench-rw-1cpu and -flat (an AMD EPYC guest) at 1.50 and 1.61 from their CPU per transaction, \
         above the range, a guest's costs; the first estimate was 10–40 µs per statement",
    );
    /// Spread of every statement's cost, client and backend alike: uniform ±25% around its
    /// mean \[EST\], inside the first estimate's ranges. Each SELECT walks to a different row and buffer, so no
    /// two round trips cost the same; with fixed costs the closed loop locks into one
    /// rhythm, and with it into one placement that a real run would not keep (backends
    /// queued behind the pgbench thread on its CPU while other CPUs idle).
    pub const COST_SPREAD_PCT: f64 = 25.0;
    /// Memory-stall share of backend work: 0.2 (\[EST\]).
    pub const MEM_FRAC: f64 = 0.2;
    /// The WAL writer and the background writer wake every `wal_writer_delay` and
    /// `bgwriter_delay`, 200 ms by default \[KNOW\], and work 200 and 180 µs at 2.6 GHz
    /// (\[REC\] pgbench-rw: two `postgres` processes woken by a timer 9 and 5 times a second,
    /// 1.8 and 0.9 ms of CPU).
    pub const BACKGROUND_PERIOD_NS: u64 = 200_000_000;
    pub const WALWRITER_CYCLES: f64 = us_cycles(173.0);
    pub const BGWRITER_CYCLES: f64 = us_cycles(156.0);
    /// select-only transactions per one that sets the WAL writer's latch (0: none). A
    /// read-only transaction that wrote WAL (a heap page pruned of the dead row versions
    /// earlier writes left, on its way to the row) commits asynchronously, and
    /// XLogSetAsyncXactLSN wakes the WAL writer with SetLatch. How many pages are left to prune
    /// is the database's past, not pgbench's: a freshly initialised (vacuumed) database, as
    /// MMTests runs it, has none, the default. \[REC\] a first pgbench-select recording on a Xeon
    /// host, on a database aged by earlier runs (no longer shipped; the shipped runs start from a
    /// fresh one, as MMTests does): 172 process-context wake-ups of one
    /// `postgres` process by the two backends in 3,569 transactions, its only wake-ups besides 4
    /// block completions: one in 21.
    pub const PRUNE_EVERY: Knob = Knob::new(
        "prune_every",
        "txns",
        0.0,
        0.0,
        1_000_000.0,
        "select-only transactions per one that prunes a page and wakes the WAL writer (0 = none, a vacuumed table)",
    )
    .integer();
    /// The WAL writer's work when its latch is set (XLogBackgroundFlush writing the new WAL
    /// out): \[REC\] that aged-database recording, 31 µs mean (17 median) at 2.6 GHz per run of
    /// that process.
    pub const WALWRITER_LATCH_CYCLES: f64 = us_cycles(27.0);
    /// The start of a run, before the first transaction (not in the recordings, whose windows
    /// begin seconds into the run; \[EST\] each, µs at 3 GHz): the pgbench thread's work to
    /// open a connection (libpq's conninfo parsing, socket, connect and startup packet) 60 µs
    /// (range 20–200); the postmaster's accept and its work around the fork of the backend
    /// (ServerLoop, BackendStartup; the fork itself is `kernel::FORK_CYCLES`) 100 µs (range
    /// 30–400); the new backend's start until it reports ReadyForQuery (InitPostgres, trust
    /// authentication, the relation cache) 1,500 µs (range 500–5,000).
    pub const CONNECT_CYCLES: f64 = us_cycles(60.0);
    pub const POSTMASTER_ACCEPT_CYCLES: f64 = us_cycles(100.0);
    pub const BACKEND_STARTUP_CYCLES: f64 = us_cycles(1500.0);
    /// MMTests caps pgbench's `-j` at CPUs / NUMA nodes / 8 (\[SRC\] pgbench-bench).
    pub const CPUS_PER_THREAD_PER_NODE: u32 = 8;
}

/// ApacheBench against a local httpd serving a static page (Phoronix `pts/apache`: `ab -n
/// 1000000 -c 100`, no keep-alive). The costs are \[EST\] from the loopback TCP
/// costs of tbench and netperf. Calibrate against ab's requests per second at 1 and 100 connections
/// on one pinned CPU at a fixed frequency.
pub mod apache {
    /// ab per request: connect (the handshake's softirq work on ab's CPU), write the request,
    /// read the response, close: about four of tbench's 5-µs client operations, 20 µs \[EST\].
    pub const AB_REQUEST_CYCLES: f64 = 20e-6 * 3.0e9;
    /// An httpd worker per request: accept, read and parse, map the URL to the file (stat,
    /// open), write headers and body, append the access-log line, close: about eight of
    /// tbench's 5-µs server operations, 40 µs \[EST\].
    pub const HTTPD_REQUEST_CYCLES: f64 = 40e-6 * 3.0e9;
    /// Spread of both costs, uniform ±25% around the mean [EST, as pgbench's]: connections
    /// end at different points of the socket buffers and log pages.
    pub const COST_SPREAD_PCT: f64 = 25.0;
    /// httpd 2.4's `MaxRequestWorkers` default for the threaded MPMs: 150 \[KNOW\].
    pub const MAX_REQUEST_WORKERS: u32 = 150;
}

// --- compute, I/O and interactive benchmarks (kernbench, gitsource, nas, fio, iozone, ycsb,
// --- ffmpeg, file reads, postmark, specpower, freq-response, step-load, speedometer, uibench) ---

/// The reference clock of the work estimates in this section: `t` seconds of work on a
/// 1024-capacity core at ~3 GHz is `t · REF_HZ` cycles, as in [`kernel`].
pub const REF_HZ: f64 = 3.0e9;

/// kernbench: `make -jN vmlinux` of a defconfig kernel. Σ work should match the real
/// build's User time and the serial parts its Elapsed at `-j` = CPUs; with no User time
/// published, both are calibrated \[CAL\] on the two ends of Broadwell's published Elapsed under
/// invariant schedutil-4C (docs/validation.md, calibrated constants): 284.0 s at 2 jobs, where
/// the build is almost all parallel work on two cores at their top turbo, and 21.2 s at 160
/// jobs on 80 CPUs, where the serial start and link are a third of it.
pub mod kernbench {
    use super::{Knob, REF_HZ};
    /// Compilation units of a defconfig `vmlinux` build: 2,500–3,000 (\[EST\]);
    /// count the `CC` lines of a real build.
    pub const UNITS_REAL: f64 = 2700.0;
    /// cc1 work per unit, lognormal: median 0.087 s at 4 GHz \[CAL\] (mean 0.13 s with the σ
    /// below), so that the 2,700-unit build, with each unit's other processes as the kernbench
    /// recording has them (less the recording guest's CPUID exits, which bare metal does not
    /// pay: [`super::kernel::RECORDED_STARTUP_CYCLES`]), takes Broadwell's published 284 s at 2
    /// jobs. The first estimate, 0.35–0.5 s, made that build 1,200 s; with only sh, gcc, as and
    /// fixdep around cc1 the calibration had 0.1 s, with the CPUID exits in them 0.081 s.
    /// Scaled by the [`COMPILE_SCALE`] knob.
    pub const CC1_MEDIAN_CYCLES: f64 = 0.087 * 4.0e9;
    /// A factor on the compilers' work (cc1 and as, [`CC1_MEDIAN_CYCLES`], and the tools that
    /// read their object, [`NM_FRAC`]), a knob of kernbench. The kernbench recording's build
    /// (linux-source-6.1, gcc 12, on the 2-CPU guest) is 1.81 \[SRC\]: its cc1 runs average
    /// 362 ms at 2.6 GHz (941 M cycles; the 43 it saw whole, exec to exit, 356 ms) against the
    /// model's mean at 1, 0.130 s at 4 GHz (520 M cycles); ±20%, the standard error of a mean
    /// of 43 units this spread (1.45–2.17). Measured, not fitted to the check.
    pub const COMPILE_SCALE: Knob = Knob::new(
        "compile_scale",
        "x",
        1.0,
        0.0,
        100.0,
        "factor on the work of every cc1, as, nm and objtool (cc1's median 0.087 s a unit at 4 GHz)",
    )
    .uncertain(
        0.85,
        1.15,
        "calibrated on Broadwell's published 284 s at 2 jobs under invariant schedutil; the table's other cells \
         came out at 0.85–1.01 of the published (docs/validation.md, calibrated constants)",
    );
    /// cc1's CPU from its exec to its first block read, when its unit has one (`cold_reads`):
    /// 3.3 ms at 2.6 GHz \[REC\], the kernbench recording's 39 cc1 that it saw whole and that
    /// read, p10 3.0, p90 3.9 ms in 36 of them (the other three 6, 121 and 209 ms), whatever
    /// the unit's size (7 ms to 2.1 s): the source and its first headers are opened before
    /// any compiling. The exec's own cost (`kernel::EXEC_CYCLES`) and the guest's CPUID exits
    /// (`kernel::RECORDED_STARTUP_CYCLES`) are part of it.
    pub const CC1_FIRST_READ_CYCLES: f64 = 3.3e-3 * 2.6e9;
    /// σ of ln(cc1 work): 0.8–1.0 (\[EST\]; its tail to ~10 s goes with the first estimate's median,
    /// with the calibrated one the largest units take 1–2 s).
    pub const CC1_SIGMA_LOG: f64 = 0.9;
    /// The tools that read the object cc1 and as made, their work as a share of the unit's
    /// cc1 work \[SRC\]: the kernbench recording's mean CPU per process (`make -j2 vmlinux` of
    /// linux-source-6.1, gcc 12, at 2.6 GHz), less the exec and exit of [`super::kernel`],
    /// over its cc1's mean of 362 ms: `as` 4.8 ms, `nm` 24.1 ms (kbuild's
    /// `check-local-export` lists the object's symbols), objtool 7.3 ms. All scale with the
    /// [`COMPILE_SCALE`] knob.
    pub const AS_FRAC: f64 = 0.012;
    pub const NM_FRAC: f64 = 0.065;
    pub const OBJTOOL_FRAC: f64 = 0.019;
    /// Share of the units objtool checks \[SRC\]: 29 of the recording's 45.
    pub const OBJTOOL_SHARE: f64 = 0.64;
    /// Recipe lines of a unit besides the compile and `check-local-export`, each an `sh -c`
    /// that runs only builtins (kbuild 6.1's `rule_cc_o_c` has a line per `$(call cmd,...)`,
    /// empty or not): 5.6 a unit \[SRC\], 252 for the recording's 45 units.
    pub const EMPTY_LINES: f64 = 5.6;
    /// The whole CPU of a small process from its fork to its exit, at 2.6 GHz \[SRC\]: the
    /// kernbench recording's mean per process. An `sh -c` of builtins only 0.96 ms; the
    /// compile's shell 1.72 ms with its four vforks; the gcc driver 2.36 ms; fixdep 3.92 ms;
    /// rm 1.12 ms; `check-local-export` (a bash script) 1.14 ms, its subshell (no exec)
    /// 0.32 ms; awk 1.16 ms. The model takes the exec, exit and fork costs of
    /// [`super::kernel`] out of these and runs the rest as the process's own work.
    pub const EMPTY_SH_CYCLES: f64 = 0.96e-3 * 2.6e9;
    pub const COMPILE_SH_CYCLES: f64 = 1.72e-3 * 2.6e9;
    pub const GCC_DRIVER_CYCLES: f64 = 2.36e-3 * 2.6e9;
    pub const FIXDEP_CYCLES: f64 = 3.92e-3 * 2.6e9;
    pub const RM_CYCLES: f64 = 1.12e-3 * 2.6e9;
    pub const CHECK_EXPORT_CYCLES: f64 = 1.14e-3 * 2.6e9;
    pub const SUBSHELL_CYCLES: f64 = 0.32e-3 * 2.6e9;
    pub const AWK_CYCLES: f64 = 1.16e-3 * 2.6e9;
    /// How the compile's shell's CPU falls around its children \[REC\]: the kernbench
    /// recording's 41 such shells seen whole (27 with objtool, 14 without), mean CPU from the
    /// exec to the first vfork (gcc's) 0.91 ms, from one vfork to the next 0.156 ms (each of
    /// the 109 such; after objtool 0.13, fixdep 0.24 and 0.17, rm 0.12 and 0.09), from the last
    /// vfork to its exit 0.039 ms. The model had all its own work before gcc, so each later
    /// vfork came 3 µs after the last child's exit. Vfork to vfork holds the vfork's and its
    /// return's cycles besides the shell's own; the first part takes what the later ones leave.
    pub const COMPILE_SH_BETWEEN_CYCLES: f64 = 0.156e-3 * 2.6e9;
    pub const COMPILE_SH_LAST_CYCLES: f64 = 0.039e-3 * 2.6e9;
    /// How the gcc driver's own work falls between its sleeps \[REC\]: the kernbench
    /// recording's 16 drivers seen whole, mean CPU from the exec to cc1's vfork 1.71 ms
    /// (median 1.73), from cc1's exit to as's vfork 0.24 ms (0.17), from as's exit to the
    /// unlink of the temporary `.s` (whose discard it waits for) 0.22 ms (0.17), and from
    /// there to its exit 0.20 ms (0.16): shares 0.72, 0.10, 0.095, 0.085 of
    /// [`GCC_DRIVER_CYCLES`]: a quarter of it runs between and after its children, where a
    /// fork right after cc1's exit meets that CPU still counting cc1's load.
    pub const GCC_DRIVER_SHARES: [f64; 4] = [0.72, 0.10, 0.095, 0.085];
    /// make's work per recipe line it runs (expanding it, `posix_spawn` of its shell, reaping
    /// it): 0.16 ms at 2.6 GHz \[REC\]. Measured as make's CPU in the window (its vfork
    /// children's before their exec included, as the trace names them `make`) over the
    /// children make itself forked: 216 µs in the first kernbench recording, 140–178 µs in its
    /// five repeats (cold page cache each), 157 and 173 µs at the middle of the six. The same
    /// measure on the model's trace gives 173 µs at 0.16 ms (235 at the first run's 0.23 ms),
    /// and make's CPU per unit within the runs (3.9 M cycles against 3.4–4.5 M).
    pub const MAKE_LINE_CYCLES: f64 = 0.16e-3 * 2.6e9;
    /// The part of it make runs between reaping a line and the vfork of the next, the vfork
    /// included: 53 µs at 2.6 GHz \[REC\], the median of the recording's make runs that end in
    /// the D sleep of a vfork (356; p10 36 µs), drawn uniformly ±[`MAKE_SPAWN_SPREAD_PCT`]
    /// (so the draws' p10 is 36 µs too). The rest of make's CPU comes in a few long runs
    /// (39 of those 356 runs take 0.3 ms or more, 29 of their 55 ms: parsing a directory's
    /// Makefile, expanding its rules), which the model gives each job at its start.
    pub const MAKE_SPAWN_CYCLES: f64 = 53e-6 * 2.6e9;
    pub const MAKE_SPAWN_SPREAD_PCT: f64 = 40.0;
    /// The part of it make runs once the child's exec releases it, up to its sleep in S
    /// (posix_spawn's return, the child's bookkeeping, the jobserver read): 10 µs at 2.6 GHz
    /// \[REC\], the median of the recording's 380 make runs from that wake-up to a switch-out
    /// in S (p10 7, p25 8, p75 14 µs; the p90, 146 µs, is make going on to its next line;
    /// the gitsource recording's make above the test scripts: 10 µs, over 18).
    /// Includes the kernel's return from the vfork (`kernel::VFORK_RETURN_CYCLES`).
    pub const MAKE_AFTER_SPAWN_CYCLES: f64 = 10e-6 * 2.6e9;
    /// The same for the gcc driver after cc1's or as's exec releases it (libiberty's
    /// pex_run returning, up to its waitpid): 19 µs at 2.6 GHz \[REC\], the median of the
    /// recording's 86 driver runs from that wake-up to a switch-out in S (p10 9, p90 30 µs).
    pub const GCC_AFTER_VFORK_CYCLES: f64 = 19e-6 * 2.6e9;
    /// A vfork child's work before its exec releases the parent (the fork's return, the
    /// child's own code, the exec up to `exec_mm_release`), for make's, the shells' and the
    /// bash script's children: 55 µs at 2.6 GHz \[REC\], the recording's children's CPU from
    /// the fork to the parent's wake-up, medians 56 µs (make's, p10 47, p90 84), 53 (sh's, p10
    /// 42, p90 94) and 56 (check-local-export's).
    pub const VFORK_CHILD_CYCLES: f64 = 55e-6 * 2.6e9;
    /// The same for the gcc driver's children (cc1, as), which take longer before they release
    /// it: 71 µs at 2.6 GHz \[REC\], median of the recording's 89 (p10 47, p90 139).
    pub const GCC_VFORK_CHILD_CYCLES: f64 = 71e-6 * 2.6e9;
    /// The range both are believed to lie in (µs at 2.6 GHz): the recording's p10 and p90.
    pub const VFORK_CHILD_US_RANGE: (f64, f64) = (42.0, 139.0);
    /// make's own work per job it starts, woken by SIGCHLD: 50–200 µs (\[EST\]).
    pub const MAKE_DISPATCH_CYCLES: f64 = 100e-6 * REF_HZ;
    /// Memory-stall share of compile work: 0.1–0.2 (\[EST\]).
    pub const MEM_FRAC: f64 = 0.15;
    /// Serial startup: 2.64 s in all \[CAL\], shared among [`START_PROCS`] steps. The first estimate
    /// was 3–8 s, as for a tree fresh from `mrproper`; start and link are scaled by one factor
    /// (0.53) to the 160-job Elapsed. Both scaled by the [`SERIAL_SCALE`] knob.
    pub const START_CYCLES: f64 = 2.64 * REF_HZ;
    /// A factor on the serial start and link ([`START_CYCLES`], [`LINK_STEPS_CYCLES`]), a knob
    /// of kernbench.
    pub const SERIAL_SCALE: Knob = Knob::new(
        "serial_scale",
        "x",
        1.0,
        0.0,
        100.0,
        "factor on the build's serial start (2.64 s at 3 GHz) and link chain (5.28 s)",
    )
    .uncertain(
        0.75,
        1.25,
        "calibrated on one published cell, Broadwell's 21.2 s at 160 jobs, where start and link are a third; \
         their steps are estimated (docs/validation.md, calibrated constants)",
    );
    /// Steps of the serial startup: \[EST\] 5. MMTests (2019) times each build after a warm-up
    /// build and `make clean`, which keeps the host tools, the configuration and the generated
    /// headers (only `mrproper` removes them), so a timed build starts with make's parse of the
    /// top Makefile, the two compiles `make clean` removed (`bounds.s`, `asm-offsets.s`) and
    /// the syscall and atomics checks: a few steps of a few hundred ms, not the first estimate's
    /// chain of short host-tool processes, which the desktop's published gitsource says would run cold
    /// (docs/validation.md, item 4). `make V=1` timestamps would measure them.
    pub const START_PROCS: f64 = 5.0;
    /// The serial link chain: vmlinux.o link, modpost, three kallsyms link passes, final link,
    /// 5.28 s in all \[CAL\] (the first estimate's 6–15 s, with its proportions, scaled as the
    /// start above). `make V=1` timestamps would measure it directly.
    pub const LINK_STEPS_CYCLES: [f64; 6] =
        [1.59 * REF_HZ, 0.53 * REF_HZ, 0.79 * REF_HZ, 0.79 * REF_HZ, 0.79 * REF_HZ, 0.79 * REF_HZ];
}

/// gitsource: git's `make test`, test scripts each a chain of short processes. The commands,
/// their mix and their costs are those of the gitsource recording (git's test scripts t0*–t3*
/// on the 2-CPU KVM guest, Linux 6.18, 2.6 GHz: 5,813 execs in 5 s).
pub mod gitsource {
    use super::Knob;
    use crate::sched::task::Quantiles;
    /// Processes started by the whole suite: 10^5–10^6 (\[EST\]).
    pub const TASKS_REAL: f64 = 3.0e5;

    /// A kind of command a test script runs.
    pub struct Command {
        /// Its name (what it execs).
        pub comm: &'static str,
        /// Share of the commands that exec something.
        pub share: f64,
        /// Its execs: git and test-tool run a wrapper script that execs the binary.
        pub execs: u32,
        /// Its CPU from fork to exit, at 2.6 GHz.
        pub cycles: f64,
        /// Block waits it does on a filesystem that discards freed blocks synchronously (ext4
        /// without a journal, mounted with `discard`): git replacing files it rewrites, rm.
        /// The mean over the kind's processes; spread evenly through their work.
        pub discards: f64,
        /// Where only some of the kind's processes write, and those run longer and wait for
        /// their discards together near their end. The others then run the rest of the mean
        /// CPU and discard nothing.
        pub writers: Option<Writers>,
    }

    /// The processes of a kind that write: a share of them, each `cycles` at 2.6 GHz with
    /// `discards` block waits, `between_cycles` apart, the last `after_cycles` before the exit.
    pub struct Writers {
        pub share: f64,
        pub cycles: f64,
        pub discards: u32,
        pub between_cycles: f64,
        pub after_cycles: f64,
    }

    impl Command {
        /// CPU of the kind's processes that do not write, at 2.6 GHz: the mean less the writers'.
        pub fn reader_cycles(&self) -> f64 {
            match &self.writers {
                Some(w) => (self.cycles - w.share * w.cycles) / (1.0 - w.share),
                None => self.cycles,
            }
        }
    }

    const fn command(comm: &'static str, share: f64, execs: u32, ms: f64, discards: f64) -> Command {
        Command { comm, share, execs, cycles: ms * 2.6e6, discards, writers: None }
    }

    /// git's writers \[REC\]: of the recording's 952 gits that exec'd and exited in the window,
    /// 348 slept in D, 1.79 times each (166 once, 118 twice, 52 three times, 12 more), for
    /// 5.43 ms of CPU (p10 2.6, median 5.0, p90 8.4 ms: they write objects and refs); the
    /// other 604 never did, for 2.49 ms (p10 1.3, median 2.3, p90 3.6 ms). A writer's first
    /// wait comes 3.7 ms into its CPU (median; p10 2.4, p90 6.3), the next ones 0.30 ms apart
    /// (p25 0.15, p75 0.41), the last 0.97 ms before its exit (p25 0.19, p75 1.6). The model's
    /// writers wait twice: 0.73 waits a git against the recording's 0.65.
    const GIT_WRITERS: Writers = Writers {
        share: 0.365,
        cycles: 5.43 * 2.6e6,
        discards: 2,
        between_cycles: 0.30 * 2.6e6,
        after_cycles: 0.97 * 2.6e6,
    };

    /// The commands \[SRC\], counted in the recording by what each process exec'd (4,587 that
    /// lived within the window): git 20%, 3.6 ms, 0.67 D sleeps a process woken by the block
    /// completion's softirq, all of them in the gits that write (`GIT_WRITERS`); expr 43%
    /// (test-lib's arithmetic), 0.96 ms; test-tool 4%, 3.0 ms; rm 5%, 1.21 ms, 8.6 such
    /// sleeps; perl 0.4% (chainlint), 16.3 ms; the rest (sed, diff, cat, mkdir, grep, wc,
    /// uname, ...) 27%, 1.1 ms each on average, which the model names `sed`. A process's CPU
    /// includes its fork's return, exec and exit.
    pub const COMMANDS: [Command; 6] = [
        Command {
            writers: Some(GIT_WRITERS),
            ..command("git", 0.205, 2, 3.6, GIT_WRITERS.share * GIT_WRITERS.discards as f64)
        },
        command("expr", 0.434, 1, 0.96, 0.0),
        command("test-tool", 0.039, 2, 3.0, 0.0),
        command("rm", 0.050, 1, 1.21, 8.6),
        command("perl", 0.004, 1, 16.3, 0.0),
        command("sed", 0.268, 1, 1.1, 0.0),
    ];
    /// Discards a test script's shell waits for per child it starts, on a filesystem that
    /// discards freed blocks synchronously \[SRC\]: the recording's shells slept in D until a
    /// block-completion softirq 445 times against 4,435 forks (0.10), each just after a child's
    /// exit and before the next fork, with the CPU's kblockd worker dispatching the request
    /// (a builtin's `>file` truncating a file the test wrote before). Those sleeps: p10 41,
    /// p50 92, p90 125 µs. Range 0.03–0.34: the share in each second of the window (it depends on
    /// which tests run: some rewrite their files at every step).
    pub const SHELL_DISCARDS: f64 = 0.10;
    /// Share of a script's children that are subshells (`$(...)` of builtins: a fork, no
    /// exec, its output read through a pipe) \[SRC\]: ~420 of 5,000 in the recording; each
    /// 0.16 ms at 2.6 GHz (0.11 ms with no child, 0.29 ms with two).
    pub const SUBSHELL_SHARE: f64 = 0.084;
    /// Share of a script's children that exec a program but are started with fork, not vfork
    /// (command substitution `$(cmd)` and pipelines of external commands: the shell goes on and
    /// then waits in S, never in D) \[SRC\]: the recording's shells, 481 of 4,237 forks (11.4%),
    /// against 3,212 vforks (75.8%) and 521 forks without exec (12.3%).
    pub const FORK_EXEC_SHARE: f64 = 0.114;
    pub const SUBSHELL_CYCLES: f64 = 0.16e-3 * 2.6e9;
    /// Share of the git commands a script starts that run a git of their own (run_command:
    /// fork, the child's exec closing the notify pipe the parent waits on in S, then wait4)
    /// \[SRC\]: the recording's processes, 97 gits started by a git against 801 started by a
    /// shell (12.1%). The child is counted among the git processes of [`COMMANDS`], so a
    /// script's git commands are that share fewer (`git_share_of_scripts`).
    pub const GIT_RUNS_GIT: f64 = 0.121;
    /// Share of a script's children that exec a program and write data back as they exit
    /// (`Op::IoWriteback`: a file the command's redirection truncated and it rewrote, whose
    /// close starts the writeback) \[REC\]: the recording's end-I/O worker woke 1,288 times
    /// from the block softirq against 4,832 exits of processes that exec'd (0.27); 849 of
    /// those wake-ups come within 1 ms of an exit, most 150–400 µs after it (a small write's
    /// time on the virtio disk), and the rest later (writes during a command's life, as git
    /// renaming a file over another, which the model leaves out). Range 0.11–0.51: the share
    /// in each second of the window (it depends on which tests run).
    pub const EXIT_FLUSH_SHARE: f64 = 0.27;
    pub const EXIT_FLUSH_SHARE_RANGE: (f64, f64) = (0.11, 0.51);
    /// A factor on every command's own work, a knob of gitsource.
    pub const WORK_SCALE: Knob = Knob::new(
        "work_scale",
        "x",
        1.0,
        0.0,
        100.0,
        "factor on the work of every command besides fork, exec and exit (the recording's commands)",
    )
    .uncertain(
        0.7,
        1.4,
        "measured: the recording's commands on a 2.6 GHz guest (git's test scripts t0*-t3*); another \
         machine, suite or git version runs them somewhat faster or slower",
    );
    /// The shell's mean work per command besides the fork or vfork: 78 µs at 3 GHz \[REC\].
    /// The recording's test-script shells use 124 µs at 2.6 GHz per child they start, the
    /// fork included (40 shells, 74–167 µs each); 76% of the children are vforked
    /// (`kernel::VFORK_CYCLES`, 20 µs), the rest forked (`kernel::FORK_US`, 80 µs at 3 GHz),
    /// which leaves 90 µs at 2.6 GHz of the shell's own. Its shape is [`SHELL_WORK`].
    pub const PARENT_US: Knob = Knob::new(
        "shell_us",
        "us",
        78.0,
        0.0,
        1e6,
        "the shell's mean work between two commands (interpreting the test script), µs at 3 GHz",
    )
    .uncertain(
        55.0,
        105.0,
        "measured: the recording's test-script shells, 124 µs at 2.6 GHz per child with its fork or vfork \
         (most scripts 100-160), on one machine",
    );
    /// The shape of the shell's work for a command, in units of its mean (`shell_us`)
    /// \[REC\]: the gitsource recording's 3,746 test-script shell runs from a wake-up to the
    /// D sleep of a vfork, less the vfork (`kernel::VFORK_CYCLES`), at 5% steps and 97.5, 99
    /// and 100% (the last point set so that the top 1% keeps its mean, 0.83 ms). Median 0.45
    /// of the mean (35 µs), p90 2.1: most commands follow at once, a few wait for the shell to
    /// evaluate a test's body.
    pub const SHELL_WORK: Quantiles = Quantiles(&[
        (0.0, 0.000),
        (0.05, 0.115),
        (0.1, 0.217),
        (0.15, 0.268),
        (0.2, 0.306),
        (0.25, 0.331),
        (0.3, 0.344),
        (0.35, 0.370),
        (0.4, 0.395),
        (0.45, 0.421),
        (0.5, 0.446),
        (0.55, 0.494),
        (0.6, 0.573),
        (0.65, 0.701),
        (0.7, 0.828),
        (0.75, 1.007),
        (0.8, 1.325),
        (0.85, 1.644),
        (0.9, 2.141),
        (0.95, 3.651),
        (0.975, 5.225),
        (0.99, 7.583),
        (1.0, 13.504),
    ]);
    /// Memory-stall share of shell and git work: \[EST\] 0.1 (as `ipc::MEM_FRAC`'s kernel-side work).
    pub const MEM_FRAC: f64 = 0.1;
    /// A child's work before its exec releases the shell (the fork's return, dash's
    /// redirections and path search, the exec up to `exec_mm_release`): 33 µs at 2.6 GHz
    /// \[REC\], the gitsource recording's test-script shells' 3,212 vfork children, their CPU
    /// from the fork to the shell's wake-up, p10 23, p90 50 µs (the shells' D sleeps: p10 24,
    /// median 36, p90 67). Shorter than kernbench's children under make (53–56 µs,
    /// `kernbench::VFORK_CHILD_CYCLES`), whose environment and command lines kbuild fills; a
    /// git's forked child (run_command) is given the same.
    pub const VFORK_CHILD_CYCLES: f64 = 33e-6 * 2.6e9;
    /// The range it is believed to lie in (µs at 2.6 GHz): the recording's p10 and p90.
    pub const VFORK_CHILD_US_RANGE: (f64, f64) = (23.0, 50.0);
}

/// spawn: a shell loop starting a program and waiting for it. Measured on the 2-vCPU guest
/// (`dvfslab record -- dash -c 'while ...; do /bin/true; done'`, the spawn-true recording):
/// medians over its 1,409 programs at 2.6 GHz, the C library's CPUID exits apart (`kernel`).
pub mod spawn {
    use super::Knob;
    /// The loop's own code per program besides the vfork (`kernel::VFORK_CYCLES`): dash's
    /// test, arithmetic and wait4 return, 2 µs at 3 GHz \[REC\], range 0.5–10: the shell's
    /// CPU from one vfork to the next, median 20 µs at 2.6 GHz (p10 18, p90 25, mean 22),
    /// less the vfork's 20. bash's loop costs more; a script's shell far more (`gitsource`'s
    /// 78 µs).
    pub const SHELL_US: Knob = Knob::new(
        "shell_us",
        "us",
        2.0,
        0.0,
        1e6,
        "the shell's own code per program besides the fork or vfork, µs at 3 GHz",
    )
    .uncertain(
        0.5,
        10.0,
        "measured: a dash loop of /bin/true on the 2-vCPU guest, the shell's CPU from one vfork to the next, \
         median 20 us at 2.6 GHz (mean 22) less the vfork's 20",
    );
    /// The child from the vfork to its exec: dash's child code (redirections, the command's
    /// lookup) and execve's kernel part up to the new program, 40 µs at 2.6 GHz \[REC\]
    /// (p10 37, p90 46).
    pub const CHILD_CYCLES: f64 = 40e-6 * 2.6e9;
    /// The program's exit and its last switch-out (the exit of a small process, its mm torn
    /// down): 23 µs at 2.6 GHz \[REC\] (p10 21, p90 26).
    /// `kernel::EXIT_CYCLES` (40 µs at 3 GHz) is a bigger process's.
    pub const EXIT_CYCLES: f64 = 23e-6 * 2.6e9;
    /// Memory-stall share of the shell's and the program's work: \[EST\] 0.1 (as
    /// `gitsource::MEM_FRAC`).
    pub const MEM_FRAC: f64 = 0.1;
}

/// NAS Parallel Benchmarks, class C, OpenMP.
pub mod nas {
    use super::REF_HZ;

    /// One NAS kernel at class C.
    pub struct Kernel {
        pub name: &'static str,
        /// Outer iterations at class C (\[KNOW\]; UA's 200 is \[EST\]).
        pub iterations: u32,
        /// Parallel regions (barriers) per iteration: 5–15 (\[EST\]).
        pub regions: u32,
        /// Memory-stall share (\[EST\]).
        pub mem_frac: f64,
        /// Total work of the run, in cycles at REF_HZ summed over threads (\[EST\]: single-core
        /// class C times of a ~3 GHz core; calibrate to the real Elapsed at class C).
        pub work_cycles: f64,
    }

    const fn k(name: &'static str, iterations: u32, regions: u32, mem_frac: f64, cpu_s: f64) -> Kernel {
        Kernel { name, iterations, regions, mem_frac, work_cycles: cpu_s * REF_HZ }
    }

    /// In the order of the `nas` workload's `kernel` knob.
    pub const KERNELS: [Kernel; 9] = [
        k("bt", 200, 10, 0.2, 700.0),
        k("cg", 75, 15, 0.6, 200.0),
        k("ep", 1, 1, 0.0, 150.0),
        k("ft", 20, 6, 0.5, 250.0),
        k("is", 10, 5, 0.6, 10.0),
        k("lu", 250, 15, 0.2, 550.0),
        k("mg", 20, 12, 0.55, 70.0),
        k("sp", 400, 12, 0.4, 600.0),
        k("ua", 200, 15, 0.3, 500.0),
    ];
    /// Load imbalance between the threads of a region, as a coefficient of variation:
    /// 0.01–0.05 (\[EST\]).
    pub const CV_IMB: f64 = 0.03;
}

/// Storage devices for the I/O benchmarks (fio, iozone, file reads). A request's
/// device time is `access · LN(σ) + bytes / bandwidth`: a lognormal access time (seek,
/// flash read) and a transfer. Calibrate with fio at iodepth 1 (access) and a large
/// sequential transfer (bandwidth) on the real device. The flushes that dbench's fsync and
/// pgbench's WAL commit wait on are uniform between bounds instead.
pub mod storage {
    use crate::workload::Completion;

    /// One device.
    pub struct Device {
        pub name: &'static str,
        /// Requests in service at once (internal parallelism).
        pub queue_depth: u32,
        /// Median access time of a random read, ns.
        pub rand_read_ns: f64,
        /// Median access time of the next sequential read (device read-ahead, no seek), ns.
        pub seq_read_ns: f64,
        /// Median access time of a sequential write (absorbed by the device's write cache), ns.
        pub write_ns: f64,
        /// Median access time of a random write, ns (a disk's cache cannot hide its seeks).
        pub rand_write_ns: f64,
        /// Transfer bandwidth, bytes per ns (= GB/s).
        pub bytes_per_ns: f64,
        /// σ of ln(access time).
        pub sigma_log: f64,
        /// σ of ln(random read time), where reads spread wider than the other accesses.
        pub read_sigma_log: f64,
        /// Median device time of a discard of a file of hundreds of KiB (a compiler's temporary
        /// assembly file), ns, from the kblockd worker's dispatch to the completion; a discard
        /// of a few blocks (rm of a small file) is a small write's `write_ns`.
        pub large_discard_ns: f64,
        /// σ of ln(large discard time).
        pub large_discard_sigma_log: f64,
        /// fsync of a file with a little dirty data (a journal commit): uniform bounds, ns.
        pub fsync_ns: (f64, f64),
        /// WAL fdatasync (a small sequential write and a cache flush): uniform bounds, ns.
        pub wal_flush_ns: (f64, f64),
        /// Where completions run: NVMe has a queue and interrupt per CPU; AHCI SATA one line.
        pub completion: Completion,
    }

    /// In the order of the `device` knob.
    pub const DEVICES: [Device; 4] = [
        // NVMe TLC: 4 KiB random read median 80 µs, σ 0.3, k_dev 32+ ([EST]); sequential
        // 60 µs, writes into the SLC cache 20 µs, 3 GB/s ([EST]).
        Device {
            name: "nvme",
            queue_depth: 32,
            rand_read_ns: 80e3,
            seq_read_ns: 60e3,
            write_ns: 20e3,
            rand_write_ns: 20e3,
            bytes_per_ns: 3.0,
            sigma_log: 0.3,
            // No figure for reads' spread or large discards: as the other accesses ([EST]).
            read_sigma_log: 0.3,
            large_discard_ns: 20e3,
            large_discard_sigma_log: 0.3,
            // The data write and the journal commit, each a 20–100 µs write with its cache
            // flush: 0.05–0.3 ms ([EST]; no published NVMe figure). WAL: 20–100 µs ([EST]).
            fsync_ns: (0.05e6, 0.3e6),
            wal_flush_ns: (20e3, 100e3),
            completion: Completion::Submitter,
        },
        // SATA SSD: ~100 µs ([EST]); sequential 60 µs, write 50 µs, 520 MB/s; 8 requests
        // at once, ~80k IOPS at depth 32 ([EST]).
        Device {
            name: "sata-ssd",
            queue_depth: 8,
            rand_read_ns: 100e3,
            seq_read_ns: 60e3,
            write_ns: 50e3,
            rand_write_ns: 50e3,
            bytes_per_ns: 0.52,
            sigma_log: 0.3,
            // No figure for reads' spread or large discards: as the other accesses ([EST]).
            read_sigma_log: 0.3,
            large_discard_ns: 50e3,
            large_discard_sigma_log: 0.3,
            // fsync 0.2–2 ms ([EST]); WAL 0.2–1 ms ([EST]).
            fsync_ns: (0.2e6, 2.0e6),
            wal_flush_ns: (0.2e6, 1.0e6),
            completion: Completion::Line { cpu: 0, coalesced: false },
        },
        // 7200 rpm disk: one head; a random access is a seek (~4 ms) plus half a turn
        // (4.2 ms), σ 0.4; sequential and cached writes 0.1 ms; 150 MB/s ([EST]).
        Device {
            name: "hdd",
            queue_depth: 1,
            rand_read_ns: 8e6,
            seq_read_ns: 0.1e6,
            write_ns: 0.1e6,
            rand_write_ns: 8e6,
            bytes_per_ns: 0.15,
            sigma_log: 0.4,
            // No figure for reads' spread or large discards: as the other accesses ([EST]).
            read_sigma_log: 0.4,
            large_discard_ns: 0.1e6,
            large_discard_sigma_log: 0.4,
            // fsync 5–20 ms ([EST]); WAL 2–10 ms ([EST]).
            fsync_ns: (5.0e6, 20.0e6),
            wal_flush_ns: (2.0e6, 10.0e6),
            completion: Completion::Line { cpu: 0, coalesced: false },
        },
        // A KVM guest's virtio-blk disk, the host's storage behind it (the recordings
        // machine): one request queue, its interrupt taken by one vCPU. A small write, a
        // cache flush or a discard of a few blocks takes 42 µs from the guest's submit to its
        // completion softirq, σ 0.3 ([SRC] the dbench-2 recording: its clients' D sleeps until
        // the block-completion softirq woke them, p10 32 µs, median 43 µs, p90 75 µs, the
        // tail from kblockd dispatching some of them; the gitsource recording's discards, from
        // the kblockd worker's switch-out to the completion, medians 37 µs (rm), 45 (git) and
        // 48 (the shells), p10 27–34, p90 52–72). Reads differ by kind, as the recordings
        // say (docs/workloads-compute.md, kernbench): a random read 85 µs, σ 0.7 ([SRC] the
        // kernbench recording's cc1 reads, issued at once without kblockd, submit to
        // completion p10 35, p50 85, p90 227 µs: headers and sources of all sizes); a discard
        // of a file of hundreds of KiB 110 µs after its dispatch, σ 0.35 ([SRC] the same
        // recording's gcc discards of its temporary `.s`: D sleeps p10 140, p50 179, p90 315
        // µs, less the kblockd worker's 69 µs run for it that the model adds,
        // `kthreads::KBLOCKD_LARGE_DISCARD_RUN_CYCLES`; range 71–246 µs: the host trims the
        // range in the backing file). Sequential reads
        // as writes, 1 GB/s and 4 requests at once ([EST]). An XFS fsync (data write, log
        // write with its flush) 60–150 µs, a WAL fdatasync (write and flush) 40–100 µs ([EST],
        // two to three such requests). Its one interrupt is taken by vCPU 1 ([SRC] the
        // recordings: of the block-completion softirqs' wake-ups, dbench-2's 4,999 of 5,052,
        // pgbench-rw's 3,488 of 3,493, gitsource's 5,484 of 6,337 and kernbench's 849 of 1,290
        // were logged on CPU 1; the guest kernel's interrupt setup chose that vCPU, and another
        // guest may choose another). It coalesces: a request done while another is in service
        // ends with that one ([SRC] block_rq_issue/complete on the guest under `dbench 2`: 415
        // of 476 pairs in flight together ended in one softirq; docs/workloads-compute.md).
        Device {
            name: "virtio",
            queue_depth: 4,
            rand_read_ns: 85e3,
            seq_read_ns: 42e3,
            write_ns: 42e3,
            rand_write_ns: 42e3,
            bytes_per_ns: 1.0,
            sigma_log: 0.3,
            read_sigma_log: 0.7,
            large_discard_ns: 110e3,
            large_discard_sigma_log: 0.35,
            fsync_ns: (60e3, 150e3),
            wal_flush_ns: (40e3, 100e3),
            completion: Completion::Line { cpu: 1, coalesced: true },
        },
    ];
}

/// The page cache path of buffered reads and writes (iozone, the file reads).
pub mod page_cache {
    use super::REF_HZ;
    /// Copy between user and page cache: ~0.25 ns per byte (\[EST\]) ...
    pub const COPY_CYCLES_PER_BYTE: f64 = 0.25e-9 * REF_HZ;
    /// ... plus 0.5 µs per read/write call (\[EST\]).
    pub const COPY_CYCLES_PER_CALL: f64 = 0.5e-6 * REF_HZ;
    /// Filesystem work per written record, new file (block allocation): 0.3–1 µs, upper end
    /// (\[EST\]).
    pub const FS_WRITE_CYCLES: f64 = 1.0e-6 * REF_HZ;
    /// The same for a rewrite (blocks already allocated): lower end (\[EST\]).
    pub const FS_REWRITE_CYCLES: f64 = 0.3e-6 * REF_HZ;
    /// Flusher CPU per 4 KiB page written back: \[EST\] 1 µs (no published figure).
    pub const WRITEBACK_CYCLES_PER_PAGE: f64 = 1.0e-6 * REF_HZ;
    /// Bytes the flusher submits at once: \[EST\] 1 MiB (a large bio of a writeback chunk).
    pub const WRITEBACK_CHUNK_BYTES: f64 = 1048576.0;
    /// `vm.dirty_background_ratio`: 10% of available memory (\[KNOW\]).
    pub const DIRTY_BACKGROUND_RATIO: f64 = 0.10;
    /// `vm.dirty_ratio`: 20% of available memory (\[KNOW\]).
    pub const DIRTY_RATIO: f64 = 0.20;
    /// Readahead window of a sequential reader: `read_ahead_kb` 128 KiB (\[KNOW\] default).
    pub const READAHEAD_BYTES: f64 = 131072.0;
}

/// PostMark on a local filesystem (Phoronix `pts/postmark`). The metadata
/// costs are dbench's (\[EST\]), the data path is [`page_cache`]. Calibrate against
/// PostMark's transactions per second on one pinned CPU at a fixed frequency.
pub mod postmark {
    use super::dbench::metadata_cycles;
    use super::REF_HZ;
    /// open(O_CREAT) of a new file: dbench's NTCreateX (8 µs \[EST\]).
    pub const CREATE_CYCLES: f64 = metadata_cycles("NTCreateX");
    /// open of an existing file: dbench's Qpathinfo (4 µs \[EST\]).
    pub const OPEN_CYCLES: f64 = metadata_cycles("Qpathinfo");
    /// close: dbench's Close (3 µs \[EST\]).
    pub const CLOSE_CYCLES: f64 = metadata_cycles("Close");
    /// unlink: dbench's Unlink (8 µs \[EST\]) ...
    pub const UNLINK_CYCLES: f64 = metadata_cycles("Unlink");
    /// ... plus the truncation of its page-cache pages: 0.2 µs per 4 KiB page \[EST\].
    pub const FREE_CYCLES_PER_PAGE: f64 = 0.2e-6 * REF_HZ;
    /// PostMark's default buffered I/O goes through stdio, whose buffer is the file's block
    /// size: the kernel sees 4 KiB reads and writes [KNOW, glibc].
    pub const STDIO_RECORD_BYTES: f64 = 4096.0;
    /// Memory-stall share of the page-cache copies: \[EST\] 0.2 (between `ipc::MEM_FRAC`'s 0.1 and
    /// a streaming copy).
    pub const MEM_FRAC: f64 = 0.2;
    /// PostMark's `set seed` default: 42 \[KNOW\].
    pub const SEED: u64 = 42;
}

/// fio with libaio, direct=1.
pub mod fio {
    use super::REF_HZ;
    /// Submission (io_submit, block layer): 3–10 µs (\[EST\]).
    pub const SUBMIT_CYCLES: f64 = 6e-6 * REF_HZ;
    /// Completion (IRQ, io_getevents return), charged to the woken job: 2–5 µs
    /// (\[EST\]).
    pub const COMPLETE_CYCLES: f64 = 3e-6 * REF_HZ;
}

/// YCSB over redis. Calibrate the costs against redis-benchmark and YCSB's own
/// unthrottled throughput on one pinned CPU at a fixed frequency.
pub mod ycsb_redis {
    use super::REF_HZ;
    /// redis GET, parse to reply: 2–8 µs (\[EST\]).
    pub const GET_CYCLES: f64 = 3e-6 * REF_HZ;
    /// redis SET: 2–8 µs (\[EST\]); a little more than GET (an allocation).
    pub const SET_CYCLES: f64 = 4e-6 * REF_HZ;
    /// YCSB (Java) client work per operation: 15–40 µs (\[EST\]).
    pub const CLIENT_CYCLES: f64 = 25e-6 * REF_HZ;
    /// Loopback TCP send of a small segment, receive softirq included: 4–8 µs (\[EST\]).
    pub const TCP_SEND_CYCLES: f64 = 6e-6 * REF_HZ;
    /// serverCron every 1/hz = 100 ms (redis `hz` 10 \[KNOW\]) ...
    pub const CRON_PERIOD_NS: u64 = 100_000_000;
    /// ... doing 50–500 µs of work (\[EST\]).
    pub const CRON_CYCLES: f64 = 200e-6 * REF_HZ;
}

/// ffmpeg / x264 encode as a rotating dependency chain with parallel side work.
pub mod ffmpeg {
    use super::REF_HZ;
    /// Work of one dependency token: 1–4 ms (\[EST\]); uniform 1–3 ms.
    pub const TOKEN_CYCLES: (f64, f64) = (1e-3 * REF_HZ, 3e-3 * REF_HZ);
    /// Tokens per frame: \[EST\] 4.
    pub const TOKENS_PER_FRAME: u32 = 4;
    /// Parallel side work (slices, lookahead) per token, as a share of the token's work,
    /// spread over the workers: a few workers at duty 0.3 (\[EST\]), taken as
    /// two workers' worth, 0.6.
    pub const SIDE_FRAC: f64 = 0.6;
    /// Memory-stall share of encoding: \[EST\] 0.1.
    pub const MEM_FRAC: f64 = 0.1;
}

/// SPECpower-like graduated load (\[UNVERIFIED\]).
pub mod specpower {
    use super::REF_HZ;
    /// Work of one transaction: \[EST\] 1 ms ("ms-scale bursts").
    pub const TX_CYCLES: f64 = 1e-3 * REF_HZ;
    /// Memory-stall share of a transaction: \[EST\] 0.1.
    pub const MEM_FRAC: f64 = 0.1;
}

/// Speedometer 2 in Chrome on Android. All \[EST\]: calibrate the iteration time on the
/// device (score = 60 / iteration seconds; ~100–180 runs/min on current big cores).
pub mod speedometer {
    use super::Knob;
    /// Subtests per iteration: 16 suites × 3 steps (add, complete, delete) (\[KNOW\] Speedometer 2.0).
    pub const SUBTESTS: usize = 48;
    /// Main-thread bursts per subtest: \[EST\] 8 (a subtest's "for item in 1..100" scaled to match the
    /// iteration time).
    pub const BURSTS_PER_SUBTEST: usize = 8;
    /// Burst length on the fastest core at its top frequency, lognormal: median 0.5–2 ms
    /// (\[EST\]); 0.8 ms.
    pub const BURST_MS: Knob = Knob::new(
        "burst_ms",
        "ms",
        0.8,
        0.01,
        1000.0,
        "main-thread burst, median, ms on the fastest core at its top frequency",
    )
    .uncertain(
        0.5,
        2.0,
        "estimate: a Speedometer 2 subtest's main-thread bursts, 0.5-2 ms on the fastest core at its top \
         frequency; no trace of Speedometer on a Pixel 6 gives them",
    );
    /// σ of ln(burst length): \[EST\] 0.8 (only the median's range is estimated).
    pub const BURST_SIGMA_LOG: f64 = 0.8;
    /// Async gap between subtests: uniform 0–4 ms (\[EST\]).
    pub const GAP_NS: (f64, f64) = (0.0, 4e6);
    /// The compositor draws a frame every this many bursts (requestAnimationFrame; \[EST\]).
    pub const COMPOSITOR_EVERY: usize = 4;
    /// Compositor work per frame: 0.3 ms (\[EST\]).
    pub const COMPOSITOR_S: f64 = 0.3e-3;
    /// A thread-pool helper wakes once per subtest for 0.2 ms (\[EST\]; the helper threads
    /// "wake briefly").
    pub const HELPER_S: f64 = 0.2e-3;
}

/// UiBench / Jankbench frame pipeline. All \[EST\]: calibrate against the mean and max
/// frame durations of a real run on the device.
pub mod uibench {
    use super::Knob;
    /// UI thread work per frame on the fastest core at its top frequency, the median of a
    /// lognormal: \[EST\] 2–4 ms with a heavy tail; 3 ms.
    pub const UI_MS: Knob = Knob::new(
        "ui_ms",
        "ms",
        3.0,
        0.01,
        1000.0,
        "UI thread work per frame, median, ms on the fastest core at its top frequency",
    )
    .uncertain(2.0, 4.0, FRAME_SOURCE);
    /// σ of ln(UI work): \[EST\] 0.5, a heavy tail.
    pub const UI_SIGMA_LOG: f64 = 0.5;
    /// RenderThread work per frame: \[EST\] median 2–5 ms; 3 ms.
    pub const RT_MS: Knob = Knob::new(
        "rt_ms",
        "ms",
        3.0,
        0.01,
        1000.0,
        "RenderThread work per frame, median, ms on the fastest core at its top frequency",
    )
    .uncertain(2.0, 5.0, FRAME_SOURCE);
    /// σ of ln(RenderThread work): \[EST\] 0.5.
    pub const RT_SIGMA_LOG: f64 = 0.5;
    /// surfaceflinger composition at the next vsync: 1–2 ms (\[EST\]).
    pub const SF_S: (f64, f64) = (1e-3, 2e-3);
    /// Where the frame work's ranges come from.
    const FRAME_SOURCE: &str = "estimate: UI thread 2-4 ms and RenderThread 2-5 ms a frame on the \
        fastest core at its top frequency; no trace of Jankbench on a Pixel 6 gives them";
}
