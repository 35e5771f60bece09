//! A virtual machine's cost of waking a halted vCPU (the preset's `vcpu_wake`), as a
//! request/response pair pinned to the two vCPUs of the KVM guest shows it: the host's latency
//! before the woken vCPU takes the IPI, the guest's resume after it, and the sender's own time
//! on the IPI.

use crate::common;

use dvfslab_sim::hw::platform::Platform;
use dvfslab_sim::observe::Timeline;
use dvfslab_sim::sched::task::{Amount, Mark, Op};
use dvfslab_sim::{Sim, SimConfig, SimResult};

/// 26,000 cycles: 10 µs at the guest's fixed 2.6 GHz.
const BURST_CYCLES: f64 = 26_000.0;

fn run(cycles: f64) -> Op {
    Op::Run { cycles: Amount::Fixed(cycles), mem_frac: 0.0 }
}

/// The first of `times` at or after `t` whose index `pick` takes: (time, index).
fn first_from(times: &[u64], pick: impl Fn(usize) -> bool, t: u64) -> Option<(u64, usize)> {
    (0..times.len()).filter(|&i| pick(i) && times[i] >= t).map(|i| (times[i], i)).min()
}

/// The times of task `task`'s sched_waking.
fn wakings_of(tl: &Timeline, task: u32) -> Vec<u64> {
    (0..tl.waking_time_ns.len()).filter(|&i| tl.waking_task[i] == task).map(|i| tl.waking_time_ns[i]).collect()
}

/// The guest's preset, with `vcpu_wake` as given (None: without the field), and without its
/// switching costs (tests/it/sched_costs.rs) and its background kernel threads, whose
/// wake-ups would come between the pair's.
fn guest(vcpu_wake: Option<serde_json::Value>) -> Platform {
    let mut doc: serde_json::Value = serde_json::from_str(&common::quiet_preset("kvm-guest-2cpu")).unwrap();
    match vcpu_wake {
        Some(v) => doc["vcpu_wake"] = v,
        None => {
            doc.as_object_mut().unwrap().remove("vcpu_wake");
        }
    }
    Platform::from_json(&doc.to_string(), "kvm").unwrap()
}

/// `programs`, each pinned to its CPU, for `duration_ms` under performance at `kernel`, with the
/// timeline.
fn run_pinned(plat: Platform, kernel: &str, duration_ms: u64, programs: Vec<(Vec<Op>, usize)>) -> SimResult {
    let cfg = SimConfig {
        governor: format!("performance:kernel={kernel}"),
        duration_ns: Some(duration_ms * 1_000_000),
        timeline: true,
        ..SimConfig::default()
    };
    Sim::with_workload(plat, &cfg, Box::new(common::PinnedPrograms(programs)), "test".into()).unwrap().run().unwrap()
}

/// A client on CPU 0 and a server on CPU 1 each work 10 µs, then wake the other from their
/// softirq (a loopback send) and block at once; 20 ms at `kernel`, with the timeline.
fn ping_pong(plat: Platform, kernel: &str) -> SimResult {
    let client = vec![
        run(BURST_CYCLES),
        Op::Loopback { ch: 0, sync: true },
        Op::Wait { ch: 1 },
        Op::Mark(Mark::Add { counter: 0, amount: 1 }),
        Op::Jump { to: 0 },
    ];
    let server = vec![Op::Wait { ch: 0 }, run(BURST_CYCLES), Op::Loopback { ch: 1, sync: true }, Op::Jump { to: 0 }];
    run_pinned(plat, kernel, 20, vec![(client, 0), (server, 1)])
}

/// For each wake-up of the server after the first few: (sched_waking → sched_wakeup,
/// sched_waking → its switch-in, sched_waking → the client's switch-out), ns.
fn server_wake_gaps(r: &SimResult) -> Vec<(u64, u64, u64)> {
    let tl = r.timeline.as_ref().expect("a timeline");
    let after =
        |times: &[u64], pick: &dyn Fn(usize) -> bool, t: u64| first_from(times, pick, t).expect("a later event").0;
    let wakings = wakings_of(tl, 1);
    wakings[5..wakings.len() - 5]
        .iter()
        .map(|&t| {
            let wakeup = after(&tl.wakeup_time_ns, &|i| tl.wakeup_task[i] == 1, t);
            let switch_in = after(&tl.switch_time_ns, &|i| tl.switch_next[i] == 1, t);
            let client_out = after(&tl.switch_time_ns, &|i| tl.switch_prev[i] == 0, t);
            (wakeup - t, switch_in - t, client_out - t)
        })
        .collect()
}

fn cost(ipi_us: f64, resume_us: f64, send_us: f64) -> serde_json::Value {
    serde_json::json!({"ipi_us": ipi_us, "resume_us": resume_us, "send_us": send_us})
}

#[test]
fn a_halted_vcpu_runs_its_woken_task_after_the_ipi_and_the_resume() {
    // 20 µs to the IPI, 10 µs of resume, on top of haltpoll's 1 µs exit: the server runs 31
    // µs after its sched_waking; the client, which blocks right after its send, leaves its CPU
    // only once the 5 µs send is done.
    let r = ping_pong(guest(Some(cost(20.0, 10.0, 5.0))), "6.18");
    let gaps = server_wake_gaps(&r);
    assert!(gaps.len() > 50, "{} round trips", gaps.len());
    for &(wakeup, switch_in, client_out) in &gaps {
        assert_eq!(wakeup, 20_000, "6.18 logs sched_wakeup where the IPI arrives");
        assert_eq!(switch_in, 31_000);
        assert_eq!(client_out, 5_000);
    }
    // A round trip: two 10 µs bursts, each followed by the 31 µs to the other side's run; the
    // 5 µs sends overlap the other side's wait.
    let trips = r.summary.metric.value;
    let expected = 20e-3 / 82e-6;
    assert!((trips - expected).abs() <= 2.0, "{trips} round trips, expected about {expected:.0}");
}

#[test]
fn before_6_0_the_waker_enqueues_the_task_itself_and_only_its_run_waits() {
    // ttwu_queue_cond sent a same-LLC wake-up of an idle CPU through its wake list only from
    // 6.0: before, sched_wakeup is logged by the waker at once, while the task still runs
    // only once the halted vCPU is back.
    let gaps = server_wake_gaps(&ping_pong(guest(Some(cost(20.0, 10.0, 5.0))), "5.15"));
    assert!(gaps.iter().all(|&(wakeup, switch_in, _)| wakeup == 0 && switch_in == 31_000), "{:?}", &gaps[..3]);
}

#[test]
fn without_vcpu_wake_a_wake_up_costs_only_the_idle_state_exit() {
    let gaps = server_wake_gaps(&ping_pong(guest(None), "6.18"));
    assert!(gaps.iter().all(|&g| g == (0, 1_000, 0)), "{:?}", &gaps[..3]);
}

#[test]
fn vcpu_wake_costs_out_of_range_are_errors_naming_the_field() {
    let mut doc: serde_json::Value = serde_json::from_str(&common::preset("kvm-guest-2cpu")).unwrap();
    doc["vcpu_wake"] = cost(20.0, -1.0, 5.0);
    let e = Platform::from_json(&doc.to_string(), "kvm").unwrap_err().to_string();
    assert!(e.contains("vcpu_wake.resume_us") && e.contains("0..10000"), "{e}");
    doc["vcpu_wake"] = serde_json::json!({"ipi_us": 20.0, "latency_us": 3.0});
    let e = Platform::from_json(&doc.to_string(), "kvm").unwrap_err().to_string();
    assert!(e.contains("latency_us"), "{e}");
}

/// The cost of IPIs with a reschedule's latency to a running vCPU (`resched_us`).
fn cost_with_resched(resched_us: f64) -> serde_json::Value {
    serde_json::json!({"ipi_us": 20.0, "resume_us": 10.0, "send_us": 5.0, "resched_us": resched_us})
}

/// A waker on CPU 0 that posts every millisecond, and on CPU 1 its wakee (a 1 µs burst per
/// wake-up) beside `neighbour`; 30 ms at `kernel`, with the timeline.
fn remote_wakes(plat: Platform, kernel: &str, neighbour: Vec<Op>) -> SimResult {
    let waker = vec![Op::Sleep { ns: Amount::Fixed(1e6) }, Op::Post { ch: 0, sync: false }, Op::Jump { to: 0 }];
    let wakee =
        vec![Op::Wait { ch: 0 }, run(2_600.0), Op::Mark(Mark::Add { counter: 0, amount: 1 }), Op::Jump { to: 0 }];
    run_pinned(plat, kernel, 30, vec![(waker, 0), (wakee, 1), (neighbour, 1)])
}

/// Per wake-up of the wakee (task 1): (sched_waking → its switch-in, → the waker's switch-out), ns.
fn wakee_gaps(r: &SimResult) -> Vec<(u64, u64)> {
    let tl = r.timeline.as_ref().expect("a timeline");
    let after = |pick: &dyn Fn(usize) -> bool, t: u64| first_from(&tl.switch_time_ns, pick, t).map(|(at, _)| at);
    wakings_of(tl, 1)
        .into_iter()
        .filter_map(|t| Some((after(&|j| tl.switch_next[j] == 1, t)? - t, after(&|j| tl.switch_prev[j] == 0, t)? - t)))
        .collect()
}

/// The states the neighbour (task 2) was switched out in.
fn neighbour_switch_outs(r: &SimResult) -> Vec<char> {
    let tl = r.timeline.as_ref().expect("a timeline");
    (0..tl.switch_prev.len()).filter(|&i| tl.switch_prev[i] == 2).map(|i| tl.switch_prev_state[i]).collect()
}

#[test]
fn a_wake_up_preempting_a_running_vcpu_waits_for_the_reschedule_ipi_and_the_waker_pays_the_send() {
    // A spinning neighbour on CPU 1: each wake-up from CPU 0 preempts it (resched_curr), which
    // on a running vCPU takes the IPI's 14 µs; the waker meanwhile spends the 5 µs send.
    let spin = vec![run(1e12), Op::Jump { to: 0 }];
    let gaps = wakee_gaps(&remote_wakes(guest(Some(cost_with_resched(14.0))), "6.18", spin.clone()));
    assert!(gaps.len() >= 25, "{} wake-ups", gaps.len());
    assert!(gaps.iter().all(|&g| g == (14_000, 5_000)), "{gaps:?}");
    // Without the latency the reschedule is at once, and no IPI is paid for.
    let gaps = wakee_gaps(&remote_wakes(guest(Some(cost_with_resched(0.0))), "6.18", spin));
    assert!(gaps.iter().all(|&g| g == (0, 0)), "{gaps:?}");
}

#[test]
fn a_task_that_blocks_before_the_reschedule_ipi_arrives_takes_the_reschedule_with_it() {
    // The neighbour runs 10 µs, sleeps 10 µs. At 5.15 the wakee, back from a 1 ms sleep,
    // preempts it whenever its wake-up finds it running: at once when the reschedule costs
    // nothing; with a 14 µs IPI the neighbour, never more than 10 µs from its sleep, has
    // blocked before the IPI lands, and is never preempted.
    let neighbour = vec![run(26_000.0), Op::Sleep { ns: Amount::Fixed(10e3) }, Op::Jump { to: 0 }];
    let at_once = neighbour_switch_outs(&remote_wakes(guest(Some(cost_with_resched(0.0))), "5.15", neighbour.clone()));
    assert!(at_once.iter().filter(|&&s| s == 'R').count() >= 5, "{at_once:?}");
    let r = remote_wakes(guest(Some(cost_with_resched(14.0))), "5.15", neighbour);
    let states = neighbour_switch_outs(&r);
    assert!(states.len() > 1000 && states.iter().all(|&s| s == 'S'), "{states:?}");
    assert!(r.summary.metric.value >= 25.0, "{} wake-ups served", r.summary.metric.value);
}

/// A waker on CPU 0 that, every millisecond, wakes a task that works 100 µs (task 1) and then
/// one that works 1 µs (task 2), both on halted CPU 1; 20 ms at 6.18, with the timeline.
fn two_wakes_in_a_row(plat: Platform) -> SimResult {
    let waker = vec![
        Op::Sleep { ns: Amount::Fixed(1e6) },
        Op::Post { ch: 0, sync: false },
        Op::Post { ch: 1, sync: false },
        Op::Jump { to: 0 },
    ];
    let long = vec![Op::Wait { ch: 0 }, run(260_000.0), Op::Jump { to: 0 }];
    let short =
        vec![Op::Wait { ch: 1 }, run(2_600.0), Op::Mark(Mark::Add { counter: 0, amount: 1 }), Op::Jump { to: 0 }];
    run_pinned(plat, "6.18", 20, vec![(waker, 0), (long, 1), (short, 1)])
}

#[test]
fn a_second_wake_up_of_a_vcpu_still_waking_sends_no_ipi_and_both_wait_for_one_pick() {
    // The first wake-up's IPI is on its way (20 µs) and the vCPU then resumes (10 µs): the
    // second joins it (a wake list already queued, need_resched already set) with no send of
    // its own, so the waker leaves after the first send's 5 µs alone, and both wake-ups are
    // logged where the IPI lands. Nothing ran on CPU 1 yet, so nothing is preempted there: its
    // pick takes the two as equals, and mostly the short task, which the long one's 100 µs
    // runs leave ahead, although it was woken second.
    let r = two_wakes_in_a_row(guest(Some(cost(20.0, 10.0, 5.0))));
    let tl = r.timeline.as_ref().expect("a timeline");
    let first_after =
        |times: &[u64], pick: &dyn Fn(usize) -> bool, t: u64| first_from(times, pick, t).expect("a later event");
    let rounds = wakings_of(tl, 1);
    assert!(rounds.len() >= 15, "{} rounds", rounds.len());
    let mut short_first = 0;
    for &t in &rounds[3..] {
        let (waker_out, _) = first_after(&tl.switch_time_ns, &|i| tl.switch_prev[i] == 0, t);
        assert_eq!(waker_out - t, 5_000, "one send");
        for task in [1, 2] {
            let (wakeup, _) = first_after(&tl.wakeup_time_ns, &|i| tl.wakeup_task[i] == task, t);
            assert_eq!(wakeup - t, 20_000, "task {task}'s sched_wakeup with the IPI");
        }
        let (switch_in, i) = first_after(&tl.switch_time_ns, &|i| tl.switch_cpu[i] == 1 && tl.switch_next[i] >= 0, t);
        assert_eq!(switch_in - t, 31_000, "the first switch-in once the vCPU is back");
        short_first += usize::from(tl.switch_next[i] == 2);
    }
    let later = rounds.len() - 3;
    assert!(short_first * 2 > later, "the later wake-up's task first in {short_first} of {later} rounds");
    let preempted = (0..tl.switch_prev.len()).filter(|&i| tl.switch_prev_state[i] == 'R').count();
    assert_eq!(preempted, 0, "no task was switched out runnable");
}

#[test]
fn two_wake_ups_of_a_waking_vcpu_with_one_deadline_run_in_the_order_they_came() {
    // Two tasks of the same work start together on halted CPU 1: both are placed at V with no
    // lag, one deadline, before the vCPU is back. The pick takes the one queued first (the
    // kernel's tree puts an equal key after those already there): the first, then the second.
    let task = || vec![run(2_600.0), Op::Sleep { ns: Amount::Fixed(1e5) }, Op::Jump { to: 0 }];
    let r = run_pinned(guest(Some(cost(20.0, 10.0, 5.0))), "6.18", 1, vec![(task(), 1), (task(), 1)]);
    let tl = r.timeline.as_ref().expect("a timeline");
    let ins: Vec<i64> = (0..tl.switch_next.len()).map(|i| tl.switch_next[i]).filter(|&t| t >= 0).take(2).collect();
    assert_eq!(ins, [0, 1]);
}

/// A waker on CPU 0 that every millisecond wakes a task on halted CPU 1, which works 1 µs and
/// blocks, and wakes it again `again_us` later; 20 ms at 6.18, with the timeline.
fn wake_twice(plat: Platform, again_us: f64) -> SimResult {
    let waker = vec![
        Op::Sleep { ns: Amount::Fixed(1e6) },
        Op::Post { ch: 0, sync: false },
        Op::Sleep { ns: Amount::Fixed(again_us * 1e3) },
        Op::Post { ch: 0, sync: false },
        Op::Jump { to: 0 },
    ];
    let wakee =
        vec![Op::Wait { ch: 0 }, run(2_600.0), Op::Mark(Mark::Add { counter: 0, amount: 1 }), Op::Jump { to: 0 }];
    run_pinned(plat, "6.18", 20, vec![(waker, 0), (wakee, 1)])
}

#[test]
fn a_wake_up_before_the_idle_vcpu_halts_is_taken_by_its_idle_loop_without_an_ipi() {
    // The first wake-up of a round reaches the halted vCPU by IPI: the wakee runs 31 µs later
    // (20 + 10 + haltpoll's 1 µs exit) for 1 µs and blocks; the waker, held 5 µs for the
    // send, posts again `again_us` after that. 5 + 30 = 35 µs is a few µs into the vCPU's
    // idle path (it halts 9 µs in): no IPI, the waker leaves at once, and the wake-up is logged
    // 20 µs after the idle entry, the task running after the 1 µs exit. 15 µs later the vCPU
    // has halted: the IPI's way again.
    let wake = serde_json::json!({
        "ipi_us": 20.0, "resume_us": 10.0, "send_us": 5.0, "halt_after_us": 9.0, "polled_wake_us": 20.0
    });
    // Per second wake-up of a round: (the wakee's idle entry before it, its sched_waking,
    // sched_wakeup, switch-in, the waker's switch-out), ns.
    let second_wakes = |again_us: f64| {
        let r = wake_twice(guest(Some(wake.clone())), again_us);
        let tl = r.timeline.as_ref().expect("a timeline");
        let after =
            |times: &[u64], pick: &dyn Fn(usize) -> bool, t: u64| first_from(times, pick, t).expect("a later event").0;
        let idle_entry = |t: u64| {
            (0..tl.switch_time_ns.len())
                .filter(|&i| tl.switch_prev[i] == 1 && tl.switch_time_ns[i] <= t)
                .map(|i| tl.switch_time_ns[i])
                .max()
                .expect("an earlier switch-out")
        };
        let wakings = wakings_of(tl, 1);
        assert!(wakings.len() >= 30, "{} wake-ups", wakings.len());
        wakings[4..]
            .iter()
            .skip(1)
            .step_by(2)
            .map(|&t| {
                let wakeup = after(&tl.wakeup_time_ns, &|i| tl.wakeup_task[i] == 1, t);
                let switch_in = after(&tl.switch_time_ns, &|i| tl.switch_next[i] == 1, t);
                let waker_out = after(&tl.switch_time_ns, &|i| tl.switch_prev[i] == 0, t);
                (idle_entry(t), t, wakeup, switch_in, waker_out)
            })
            .collect::<Vec<_>>()
    };
    let polled = second_wakes(30.0);
    for &(idle, t, wakeup, switch_in, waker_out) in &polled {
        assert!(t - idle < 9_000, "{} µs into the idle path", (t - idle) / 1000);
        assert_eq!(wakeup - idle, 20_000, "logged 20 µs after the idle entry");
        assert_eq!(switch_in - wakeup, 1_000, "then the idle state's exit");
        assert_eq!(waker_out, t, "no IPI to send");
    }
    let halted = second_wakes(45.0);
    for &(idle, t, wakeup, switch_in, waker_out) in &halted {
        assert!(t - idle > 9_000, "{} µs into the idle path", (t - idle) / 1000);
        assert_eq!((wakeup - t, switch_in - t, waker_out - t), (20_000, 31_000, 5_000));
    }
}

/// The last utilisation `cpu` logged in `r`'s timeline.
fn last_util(r: &SimResult, cpu: u32) -> f64 {
    let tl = r.timeline.as_ref().expect("a timeline");
    let i = (0..tl.util_cpu.len()).rev().find(|&i| tl.util_cpu[i] == cpu).expect("a util sample");
    f64::from(tl.util_avg[i])
}

#[test]
fn the_kernel_charges_a_task_woken_by_ipi_from_its_enqueue() {
    // The pair of 10 µs bursts with 20 µs to the IPI, 10 of resume (and haltpoll's 1 µs exit),
    // 5 µs sends: a round trip of 82 µs. wakeup_preempt's rq_clock_skip_update leaves the clock
    // at the enqueue for the switch that follows, so the server is charged from its enqueue:
    // from 6.0 the IPI handler's (resume, exit, burst and send: 26 µs a trip, 32% of its vCPU),
    // before it the waker's (the IPI's 20 µs as well: 46 µs, 56%). Its utilisation after
    // 300 ms, most of the way to those shares, says which.
    let pair = |kernel: &str| {
        let client =
            vec![run(BURST_CYCLES), Op::Loopback { ch: 0, sync: true }, Op::Wait { ch: 1 }, Op::Jump { to: 0 }];
        let server =
            vec![Op::Wait { ch: 0 }, run(BURST_CYCLES), Op::Loopback { ch: 1, sync: true }, Op::Jump { to: 0 }];
        run_pinned(guest(Some(cost(20.0, 10.0, 5.0))), kernel, 300, vec![(client, 0), (server, 1)])
    };
    let share_618 = last_util(&pair("6.18"), 1) / 1024.0;
    let share_515 = last_util(&pair("5.15"), 1) / 1024.0;
    assert!((share_618 - 26.0 / 82.0).abs() < 0.04, "6.18: {share_618}");
    assert!((share_515 - 46.0 / 82.0).abs() < 0.05, "5.15: {share_515}");
}
