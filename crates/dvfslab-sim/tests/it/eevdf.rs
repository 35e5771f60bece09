//! The fair class's rules as they show in runs, per kernel version: EEVDF's wake-up
//! preemption of a loopback request/response pair sharing a CPU, its time slices, and a
//! vfork parent's wake-up at its child's exec.

use std::rc::Rc;

use crate::common;

use dvfslab_sim::hw::platform::Platform;
use dvfslab_sim::sched::task::{Amount, Mark, Op};
use dvfslab_sim::workload::{Better, Metric, RunStats, TaskSpec, Workload};
use dvfslab_sim::{simulate, Sim, SimConfig, SimResult};

/// `programs` on CPU 0 of the 2-CPU KVM guest (a fixed 2.6 GHz, without its background) at
/// `kernel`, with the timeline.
fn run_on_cpu0(kernel: &str, programs: Vec<Vec<Op>>, duration_ns: u64) -> SimResult {
    let plat = Platform::from_json(&common::quiet_preset("kvm-guest-2cpu"), "kvm").unwrap();
    let cfg = SimConfig {
        governor: format!("performance:kernel={kernel}"),
        duration_ns: Some(duration_ns),
        timeline: true,
        ..SimConfig::default()
    };
    Sim::with_workload(
        plat,
        &cfg,
        Box::new(common::PinnedPrograms(programs.into_iter().map(|p| (p, 0)).collect())),
        "test".into(),
    )
    .unwrap()
    .run()
    .unwrap()
}

fn run(cycles: f64) -> Op {
    Op::Run { cycles: Amount::Fixed(cycles), mem_frac: 0.0 }
}

/// Switch-outs of `task` in `state` ('R' preempted, 'S' asleep).
fn switch_outs(r: &SimResult, task: i64, state: char) -> usize {
    let tl = r.timeline.as_ref().expect("a timeline");
    tl.switch_prev.iter().zip(&tl.switch_prev_state).filter(|&(&p, &s)| p == task && s == state).count()
}

/// A loopback request/response pair on one CPU, as tbench's and netperf's sides run: each
/// receives, works and sends (`before` cycles; the client more than the server), the send's
/// receive waking the other side from this CPU's softirq, then the rest of the send and the
/// next receive (`tail` cycles) before it blocks. Returns (round trips, client preempted,
/// client asleep, server preempted, server asleep).
fn ping_pong(kernel: &str) -> (usize, usize, usize, usize, usize) {
    let (client_before, server_before, tail) = (10_000.0, 7_000.0, 4_000.0);
    let client = vec![
        run(client_before),
        Op::Loopback { ch: 0, sync: true },
        run(tail),
        Op::Wait { ch: 1 },
        Op::Mark(Mark::Add { counter: 0, amount: 1 }),
        Op::Jump { to: 0 },
    ];
    let server =
        vec![Op::Wait { ch: 0 }, run(server_before), Op::Loopback { ch: 1, sync: true }, run(tail), Op::Jump { to: 0 }];
    let r = run_on_cpu0(kernel, vec![client, server], 50_000_000);
    let trips = r.summary.metric.value as usize;
    (trips, switch_outs(&r, 0, 'R'), switch_outs(&r, 0, 'S'), switch_outs(&r, 1, 'R'), switch_outs(&r, 1, 'S'))
}

#[test]
fn a_loopback_pair_on_one_cpu_preempts_its_sender_from_6_12() {
    // From 6.12 a side that blocks while not eligible stays queued (delayed dequeue). When
    // the other side's send wakes it, its lag is read against the sender's vruntime as last
    // accounted, at the sender's switch-in, and it keeps its place; the sender, accounted at
    // the preemption check with the burst it ran since, is then past it: the woken side runs
    // at once. The side with the longer burst before its send is the one preempted, and,
    // preempted before it blocks, finds its answer waiting: it neither sleeps nor is woken.
    let (trips, c_r, c_s, s_r, s_s) = ping_pong("6.18");
    assert!(trips > 3_000, "{trips}");
    assert!(c_r * 10 > trips * 9, "the client is preempted in most round trips: {c_r} of {trips}");
    assert!(c_s * 20 < trips && s_r * 20 < trips, "{c_s} {s_r}");
    assert!(s_s * 10 > trips * 9, "the server sleeps in most: {s_s} of {trips}");
    // 6.6–6.11 place every waking side with the lag it left with and dequeue every sleeper:
    // a side leaving behind the other is owed service, but the pair's bursts keep the sleeper
    // ahead when it blocks here, and it never preempts.
    let (trips66, c_r66, _, s_r66, _) = ping_pong("6.6");
    assert!((c_r66 + s_r66) * 100 < trips66, "{c_r66} + {s_r66} of {trips66}");
    // CFS (before 6.6) places a sleeper at most half a latency period (3 ms on 2 CPUs) behind
    // the running task and preempts when it is more than the wake-up granularity (2 ms)
    // behind: the server, which runs less, falls behind and preempts in part of the trips.
    let (trips65, c_r65, _, s_r65, _) = ping_pong("6.5");
    assert!(c_r65 > trips65 / 4 && c_r65 < trips65 * 9 / 10 && s_r65 == 0, "{c_r65} {s_r65} of {trips65}");
}

/// `taskset -c 0 perf bench sched pipe` on the 2-CPU KVM guest at 6.18.44, A working `a_us` and
/// B `b_us` at each stop: (round trips, A preempted, B preempted), switch-outs in state R.
fn pinned_pipe(a_us: f64, b_us: f64) -> (usize, usize, usize) {
    const TRIPS: usize = 2_000;
    let cfg = SimConfig {
        governor: "performance:kernel=6.18.44".into(),
        workload: format!("pipe-test:loops={TRIPS},one_cpu=1,work_us={a_us},b_work_us={b_us}"),
        timeline: true,
        ..SimConfig::default()
    };
    let r = simulate(&common::preset("kvm-guest-2cpu"), "kvm", &cfg).unwrap();
    (TRIPS, switch_outs(&r, 0, 'R'), switch_outs(&r, 1, 'R'))
}

#[test]
fn a_pinned_pipe_ping_pong_preempts_the_side_that_works_longer_as_the_recording_kernel_does() {
    // Both sides of a pipe ping-pong on one CPU: each write wakes the other side there. A side
    // that blocked while eligible comes back with the lag it left with, which puts the writer,
    // accounted up to its write, past the average: the woken side runs at once. The side that
    // works longer at each stop runs ahead, so it is the one preempted. Measured under the
    // recordings' kernel (6.18.44 in a 2-vCPU guest, tasks pinned with taskset, 2,000 round
    // trips, switch-outs in state R from the trace; scripts/probes/pipe-pingpong.c): A 25 µs and B 20 µs a stop, A preempted 1,982 times and B
    // 12; A 20 and B 25, A 25 times and B 1,963; equal stops, about one preemption a round
    // trip (perf bench sched pipe itself: 4,460 in 5,000), shared between the sides as
    // interrupts tip the pair from one regime to the other.
    let (trips, a, b) = pinned_pipe(25.0, 20.0);
    assert!(a * 100 > trips * 95 && b * 100 < trips * 3, "A {a}, B {b} of {trips}");
    let (trips, a, b) = pinned_pipe(20.0, 25.0);
    assert!(b * 100 > trips * 95 && a * 100 < trips * 3, "A {a}, B {b} of {trips}");
    let (trips, a, b) = pinned_pipe(0.0, 0.0);
    assert!((a + b) * 100 > trips * 85 && a + b <= trips + 2, "A {a}, B {b} of {trips}");
}

/// Two loopback pairs sharing CPU 0 at `kernel`, each side working `before` cycles up to its
/// send's wake-up of the other and `tail` after it (the splits a 6.18.44 guest's tbench run
/// gave with `sched_stat_runtime`): switch-outs in state R over 200 ms.
fn two_pairs_preempted(kernel: &str) -> usize {
    let (client_before, server_before, tail) = (22_400.0, 19_700.0, 6_700.0);
    let pair = |ch: u32| {
        let client = vec![
            run(client_before),
            Op::Loopback { ch, sync: true },
            run(tail),
            Op::Wait { ch: ch + 1 },
            Op::Mark(Mark::Add { counter: 0, amount: 1 }),
            Op::Jump { to: 0 },
        ];
        let server = vec![
            Op::Wait { ch },
            run(server_before),
            Op::Loopback { ch: ch + 1, sync: true },
            run(tail),
            Op::Jump { to: 0 },
        ];
        [client, server]
    };
    let r = run_on_cpu0(kernel, pair(0).into_iter().chain(pair(2)).collect(), 200_000_000);
    (0..4).map(|t| switch_outs(&r, t, 'R')).sum()
}

#[test]
fn from_6_18_33_the_wake_up_check_lets_a_delayed_task_go_and_picks_again() {
    // Four sides on one CPU block often while not eligible, so delayed tasks wait in the
    // queue. Mainline's wake-up check only looks at the pick: a delayed task it finds first
    // keeps the running side on the CPU. The 6.18 stable series' reworked check (6.18.33) picks
    // with pick_next_entity, which dequeues that task and picks again, often the woken side:
    // more wake-ups preempt.
    let (before, reworked) = (two_pairs_preempted("6.18.32"), two_pairs_preempted("6.18.33"));
    assert_eq!(before, two_pairs_preempted("6.18"), "no stable update before 6.18.33 changes the check");
    assert!(reworked * 100 > before * 105, "6.18.32: {before} preemptions, 6.18.33: {reworked}");
}

#[test]
fn cpu_hogs_sharing_a_cpu_switch_at_each_deadline_under_eevdf() {
    // Two tasks that never block, on one CPU of a 2-CPU machine at 250 Hz. EEVDF gives each
    // a 1.5 ms request (0.75 ms × (1 + log2 2)): its deadline, reached within a tick, is seen
    // at the tick, which renews it and reschedules; the other task, behind and eligible, runs:
    // a switch every tick, 250 a second. (From 6.8, when two deadlines tie, as these do after
    // equal runs, the waiting task wins.) CFS gives each max(6 ms · 2 / 2, 1.5 ms) = 6 ms of a
    // 12 ms period, two ticks: 125 a second.
    let hog = vec![run(1e12), Op::Jump { to: 0 }];
    let switches = |kernel: &str| {
        let r = run_on_cpu0(kernel, vec![hog.clone(), hog.clone()], 1_000_000_000);
        switch_outs(&r, 0, 'R') + switch_outs(&r, 1, 'R')
    };
    let eevdf = switches("6.8");
    assert!((245..=251).contains(&eevdf), "{eevdf}");
    let cfs = switches("6.5");
    assert!((120..=126).contains(&cfs), "{cfs}");
}

/// A parent on CPU 0 vforks a child and waits for it, after running `tail` cycles of the fork
/// once the child is queued; CPU 1 is busy with a pinned hog so that the child stays on CPU 0.
/// The child works 50 µs, releases the parent (its exec's `complete_vfork_done`) and works
/// 2 ms more. Returns the parent's switch-out states and how the child's first switch-out
/// left it.
fn vfork_at(kernel: &str, tail: f64) -> (Vec<char>, char) {
    struct Vfork(f64);
    impl Workload for Vfork {
        fn tasks(&self, _: &Platform) -> Vec<TaskSpec> {
            let parent = vec![
                run(1_000.0),
                Op::Spawn { program: 0, count: 1 },
                run(self.0),
                Op::WaitUninterruptible { ch: 0 },
                Op::WaitChildren,
                Op::Exit,
            ];
            let hog = vec![run(1e12), Op::Jump { to: 0 }];
            vec![
                TaskSpec::new("parent", Rc::from(parent)).pinned(vec![0]),
                TaskSpec::new("hog", Rc::from(hog)).pinned(vec![1]),
            ]
        }
        fn programs(&self, _: &Platform) -> Vec<Rc<[Op]>> {
            vec![Rc::from(vec![run(130_000.0), Op::Post { ch: 0, sync: false }, run(5_200_000.0), Op::Exit])]
        }
        fn default_duration_ns(&self) -> u64 {
            10_000_000
        }
        fn metric(&self, _: &RunStats) -> Metric {
            Metric { name: "none".into(), value: 0.0, unit: "".into(), better: Better::Higher }
        }
    }
    let plat = Platform::from_json(&common::quiet_preset("kvm-guest-2cpu"), "kvm").unwrap();
    let cfg = SimConfig {
        governor: format!("performance:kernel={kernel}"),
        duration_ns: Some(10_000_000),
        timeline: true,
        ..SimConfig::default()
    };
    let r = Sim::with_workload(plat, &cfg, Box::new(Vfork(tail)), "test".into()).unwrap().run().unwrap();
    let tl = r.timeline.as_ref().expect("a timeline");
    let states = |task: i64| -> Vec<char> {
        tl.switch_prev.iter().zip(&tl.switch_prev_state).filter(|&(&p, _)| p == task).map(|(_, &s)| s).collect()
    };
    // Task 2 is the child: the parent and the hog are 0 and 1.
    (states(0), states(2)[0])
}

#[test]
fn a_vfork_parent_preempts_its_child_at_exec_from_6_12() {
    // The parent runs 1.5 µs of its fork after the child is queued at the average vruntime,
    // so it sleeps just behind the child's vruntime: from 6.12 it is not eligible and stays
    // queued (delayed dequeue). The child runs 50 µs alone; when it wakes the parent, the
    // parent is eligible again and the child, now past the average, is not: the parent
    // preempts it, then sleeps in wait4 (S) and is woken at the child's exit.
    let (parent, child) = vfork_at("6.18", 3_900.0);
    assert_eq!(parent, ['D', 'S', 'X']);
    assert_eq!(child, 'R', "the child is preempted at its exec");
    // With no tail, the parent leaves at the average, is dequeued, and comes back at the
    // child's vruntime: the child keeps the CPU to its exit (a zombie, 'Z'), and wait4
    // reaps it without sleeping.
    let (parent, child) = vfork_at("6.18", 0.0);
    assert_eq!((parent.as_slice(), child), (&['D', 'X'][..], 'Z'));
    // 6.6–6.11 dequeue every sleeper with its lag: the parent's small debt puts it behind the
    // child at the wake-up, and the child runs on, protected.
    let (parent, child) = vfork_at("6.6", 3_900.0);
    assert_eq!((parent.as_slice(), child), (&['D', 'X'][..], 'Z'));
}
