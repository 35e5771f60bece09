//! The blocking primitives that workload models are built from, each in a small workload.

use crate::common;

use std::rc::Rc;

use dvfslab_sim::hw::platform::Platform;
use dvfslab_sim::observe::Migration;
use dvfslab_sim::sched::task::{Amount, CrossingCycles, Mark, Op};
use dvfslab_sim::sched::waker::WakeContext;
use dvfslab_sim::workload::{Better, Completion, DeviceSpec, Metric, RunStats, Service, TaskSpec, Workload};
use dvfslab_sim::{Sim, SimConfig, SimResult};

/// A workload given as programs; the metric is counter 0 and the stats are kept for checks.
struct Programs {
    tasks: Vec<Vec<Op>>,
    spawned: Vec<Vec<Op>>,
    devices: Vec<DeviceSpec>,
}

impl Workload for Programs {
    fn tasks(&self, _: &Platform) -> Vec<TaskSpec> {
        self.tasks.iter().enumerate().map(|(i, p)| TaskSpec::new(format!("t{i}"), Rc::from(p.clone()))).collect()
    }
    fn programs(&self, _: &Platform) -> Vec<Rc<[Op]>> {
        self.spawned.iter().map(|p| Rc::from(p.clone())).collect()
    }
    fn devices(&self) -> Vec<DeviceSpec> {
        self.devices.clone()
    }
    fn default_duration_ns(&self) -> u64 {
        1_000_000_000
    }
    fn metric(&self, stats: &RunStats) -> Metric {
        Metric {
            name: "count".into(),
            value: stats.counters.first().copied().unwrap_or(0) as f64,
            unit: "ops".into(),
            better: Better::Higher,
        }
    }
}

fn run(platform: &str, governor: &str, w: Programs, duration_s: f64) -> SimResult {
    simulate(platform, governor, w, duration_s, false)
}

/// As `run`, also recording every frequency decision and migration.
fn run_explained(platform: &str, governor: &str, w: Programs, duration_s: f64) -> SimResult {
    simulate(platform, governor, w, duration_s, true)
}

/// The objects' worked examples count their own timing: the preset's switching costs are
/// left out.
fn simulate(platform: &str, governor: &str, w: Programs, duration_s: f64, explain: bool) -> SimResult {
    let plat = Platform::from_json(&common::preset_without_sched_costs(platform), platform).unwrap();
    let cfg = SimConfig {
        governor: governor.into(),
        duration_ns: Some((duration_s * 1e9) as u64),
        explain,
        ..SimConfig::default()
    };
    Sim::with_workload(plat, &cfg, Box::new(w), "test".into()).unwrap().run().unwrap()
}

fn count(n: u16) -> Op {
    Op::Mark(Mark::Add { counter: n, amount: 1 })
}

const RUN_10US: Op = Op::Run { cycles: Amount::Fixed(23_000.0), mem_frac: 0.0 }; // 10 µs at 2.3 GHz

/// Run `tasks` (program, CPU) on `plat` under `governor` for `duration_ns`.
fn run_pinned(plat: &Platform, governor: &str, duration_ns: u64, tasks: Vec<(Vec<Op>, usize)>) -> SimResult {
    let cfg = SimConfig { governor: governor.into(), duration_ns: Some(duration_ns), ..SimConfig::default() };
    Sim::with_workload(plat.clone(), &cfg, Box::new(common::PinnedPrograms(tasks)), "test".into())
        .unwrap()
        .run()
        .unwrap()
}

#[test]
fn ping_pong_over_channels_alternates_and_spreads() {
    let client = vec![RUN_10US, Op::Post { ch: 0, sync: true }, Op::Wait { ch: 1 }, count(0), Op::Jump { to: 0 }];
    let server = vec![Op::Wait { ch: 0 }, RUN_10US, Op::Post { ch: 1, sync: true }, count(1), Op::Jump { to: 0 }];
    let r = run(
        "haswell-e5-2670v3-2s",
        "performance",
        Programs { tasks: vec![client, server], spawned: vec![], devices: vec![] },
        0.1,
    );
    let round_trips = r.summary.metric.value;
    // Each round trip is two bursts of 23k cycles at the 2-core turbo of 3.1 GHz (7.4 µs) plus
    // two C1 exits (2 µs): 100 ms / 18.8 µs ≈ 5300, once the idle governor learned the gaps.
    assert!(round_trips > 4_500.0 && round_trips < 100e-3 / 14.8e-6, "{round_trips}");
    let busy: Vec<_> = r.summary.per_cpu.iter().filter(|c| c.busy_pct > 1.0).collect();
    assert_eq!(busy.len(), 2, "the pair runs on two CPUs (select_idle_sibling)");
}

#[test]
fn barrier_releases_together() {
    let worker = |cycles: f64| {
        vec![
            Op::Run { cycles: Amount::Fixed(cycles), mem_frac: 0.0 },
            Op::Barrier { id: 0, n: 4 },
            count(0),
            Op::Jump { to: 0 },
        ]
    };
    let tasks = vec![worker(1e6), worker(2e6), worker(3e6), worker(4e6)];
    let r = run("skylake-e3-1240v5", "performance", Programs { tasks, spawned: vec![], devices: vec![] }, 0.2);
    // Every round costs the slowest worker (4e6 cycles at ≤ 3.9 GHz): all four count together.
    let n = r.summary.metric.value;
    assert_eq!(n % 4.0, 0.0);
    let rounds = n / 4.0;
    assert!(rounds <= 0.2 * 3.9e9 / 4e6 + 1.0 && rounds > 100.0, "{rounds}");
}

#[test]
fn mutex_serialises_critical_sections() {
    let crit = Op::Run { cycles: Amount::Fixed(35_000.0), mem_frac: 0.0 }; // 10 µs at 3.5 GHz
    let worker = vec![Op::Lock { id: 0 }, crit.clone(), Op::Unlock { id: 0 }, count(0), Op::Jump { to: 0 }];
    let r = run(
        "skylake-e3-1240v5",
        "userspace:scaling_setspeed=3500000",
        Programs { tasks: vec![worker; 4], spawned: vec![], devices: vec![] },
        0.1,
    );
    // At most one 10 µs section at a time: no more than 100 ms / 10 µs sections in all. At
    // least one per section and wake-up of the next waiter out of the deepest state (C8's
    // 200 µs): menu may settle the waiters' CPUs in C6, each hand-off then waking a CPU out of
    // it, whose idle periods (three sections and three exits) keep justifying C6.
    let n = r.summary.metric.value;
    assert!(n <= 10_000.0 && n > 100e3 / (10.0 + 200.0), "{n}");
}

#[test]
fn io_device_queue_depth_limits_throughput_and_wakes_with_iowait() {
    let io = |dev| {
        vec![
            Op::Io { dev, service_ns: Amount::Fixed(1_000_000.0), transfer_ns: Amount::ZERO },
            count(0),
            Op::Jump { to: 0 },
        ]
    };
    let w = |depth| Programs {
        tasks: vec![io(0), io(0), io(0), io(0)],
        spawned: vec![],
        devices: vec![DeviceSpec {
            name: "disk".into(),
            queue_depth: depth,
            service: Service::Queued,
            completion: Completion::Submitter,
        }],
    };
    let one = run("skylake-e3-1240v5", "performance", w(1), 1.0).summary.metric.value;
    let four = run("skylake-e3-1240v5", "performance", w(4), 1.0).summary.metric.value;
    // Depth 1: the device is the bottleneck, 1 ms per I/O whatever the CPUs do.
    assert!((one - 1000.0).abs() <= 2.0, "{one}");
    // Depth 4: each task's loop is its 1 ms I/O plus its CPU's exit from the idle state the
    // 1 ms gap put it in (C8 on this part, 200 µs), so close to 4 / 1.2 ms.
    assert!(four > 3_200.0 && four < 4_000.0, "{four}");
}

#[test]
fn a_waited_device_serves_like_a_queued_one_but_wakes_without_iowait() {
    // A task waiting 1 ms on the device, then working 20 µs: schedutil boosts its CPU for
    // I/O-wait wake-ups only.
    let task = vec![
        Op::Io { dev: 0, service_ns: Amount::Fixed(1_000_000.0), transfer_ns: Amount::ZERO },
        Op::Run { cycles: Amount::Fixed(70_000.0), mem_frac: 0.0 },
        count(0),
        Op::Jump { to: 0 },
    ];
    let w = |service| Programs {
        tasks: vec![task.clone()],
        spawned: vec![],
        devices: vec![DeviceSpec { name: "disk".into(), queue_depth: 1, service, completion: Completion::Submitter }],
    };
    let summary = |service| run("skylake-e3-1240v5", "schedutil", w(service), 0.5).summary;
    let (queued, waited) = (summary(Service::Queued), summary(Service::Waited));
    let busiest_khz = |r: &dvfslab_sim::result::RunJson| {
        r.per_cpu.iter().max_by(|a, b| a.busy_pct.total_cmp(&b.busy_pct)).unwrap().avg_freq_khz
    };
    // The device sets the pace of both loops: a round is its 1 ms plus an idle exit.
    for r in [&queued, &waited] {
        assert!((350.0..=500.0).contains(&r.metric.value), "{} rounds", r.metric.value);
    }
    assert!(
        busiest_khz(&queued) > 1.5 * busiest_khz(&waited),
        "queued {} kHz, waited {} kHz",
        busiest_khz(&queued),
        busiest_khz(&waited)
    );
}

#[test]
fn transfers_share_the_devices_data_channel() {
    // 0.1 ms of access, up to four at once, then 1 ms on the channel.
    let io = |transfer_ns| {
        vec![
            Op::Io { dev: 0, service_ns: Amount::Fixed(100_000.0), transfer_ns: Amount::Fixed(transfer_ns) },
            count(0),
            Op::Jump { to: 0 },
        ]
    };
    let w = |transfer_ns| Programs {
        tasks: vec![io(transfer_ns); 4],
        spawned: vec![],
        devices: vec![DeviceSpec {
            name: "disk".into(),
            queue_depth: 4,
            service: Service::Queued,
            completion: Completion::Submitter,
        }],
    };
    let shared = run("skylake-e3-1240v5", "performance", w(1_000_000.0), 1.0).summary.metric.value;
    // One transfer at a time: the channel, not the four slots, sets the pace.
    assert!(shared <= 1_000.0 && shared > 990.0, "{shared}");
    // Without transfers the four accesses overlap (each loop ~0.1 ms plus an idle exit).
    let overlapped = run("skylake-e3-1240v5", "performance", w(0.0), 1.0).summary.metric.value;
    assert!(overlapped > 10_000.0, "{overlapped}");
}

#[test]
fn group_commit_serves_every_waiting_request_with_one_commit() {
    let io = vec![
        Op::Io { dev: 0, service_ns: Amount::Fixed(1_000_000.0), transfer_ns: Amount::ZERO },
        count(0),
        Op::Jump { to: 0 },
    ];
    let w = |tasks: usize| Programs {
        tasks: vec![io.clone(); tasks],
        spawned: vec![],
        devices: vec![DeviceSpec {
            name: "journal".into(),
            queue_depth: 1,
            service: Service::GroupCommit { leader_iowait: true },
            completion: Completion::Submitter,
        }],
    };
    let one = run("skylake-e3-1240v5", "performance", w(1), 1.0).summary.metric.value;
    let four = run("skylake-e3-1240v5", "performance", w(4), 1.0).summary.metric.value;
    // One task: a commit per request, 1 ms each plus the exit from C8 between them, or from
    // C6 for the fifth of the waits that start within C8's 800 µs residency of a tick
    // (HZ=250), which menu keeps for such a short idle period (4.17+). The whole package
    // sleeps meanwhile: each exit is the package's (150 µs and 63.8 µs, `wake_latency_us`).
    let expected = 1000.0 / (1.0 + 0.8 * 0.15 + 0.2 * 0.0638);
    assert!((one - expected).abs() <= 10.0, "{one}");
    // Four tasks: requests that queue behind a commit share the next one, so the device
    // completes far more than the 1000 single-request commits a second it has time for.
    assert!(four > 1_500.0 && four <= 4.0 * one, "{four}");
}

#[test]
fn offers_to_a_full_channel_are_dropped() {
    // A sender posts 1000 tokens, one per 10 µs; the receiver takes 30 µs per token.
    let run_us = |us: f64| Op::Run { cycles: Amount::Fixed(us * 3.5e3), mem_frac: 0.0 };
    let received = |post: Op| {
        let sender = vec![run_us(10.0), post, Op::Repeat { to: 0, times: 1000 }, Op::Exit];
        let receiver = vec![Op::Wait { ch: 0 }, run_us(30.0), count(0), Op::Jump { to: 0 }];
        let w = Programs { tasks: vec![sender, receiver], spawned: vec![], devices: vec![] };
        run("skylake-e3-1240v5", "userspace:scaling_setspeed=3500000", w, 0.1).summary.metric.value
    };
    // Posts queue up and are all received in the end.
    assert_eq!(received(Op::Post { ch: 0, sync: false }), 1000.0);
    // With room for 4, the receiver gets one of every three over the sender's 10 ms, plus the
    // 4 left queued; the rest are lost.
    let offered = received(Op::Offer { ch: 0, capacity: 4 });
    assert!((320.0..=345.0).contains(&offered), "{offered}");
}

#[test]
fn answers_go_back_to_the_connection_that_asked() {
    // One server takes requests from a shared channel and answers each on the channel its
    // asker gave; three clients ask 10, 20 and 30 times, each waiting on its own channel.
    let server =
        vec![Op::Take { ch: 0 }, RUN_10US, Op::Answer { sync: true }, Op::Repeat { to: 0, times: 60 }, Op::Exit];
    let client = |me: u32, times: u32| {
        vec![
            Op::Ask { ch: 0, answer: me, sync: true },
            Op::Wait { ch: me },
            count(0),
            Op::Repeat { to: 0, times },
            Op::Exit,
        ]
    };
    let tasks = vec![server, client(1, 10), client(2, 20), client(3, 30)];
    let r = run("skylake-e3-1240v5", "performance", Programs { tasks, spawned: vec![], devices: vec![] }, 1.0);
    // Every request is answered to its asker: had one client been given another's answers, it
    // would have finished early and left the other waiting for good.
    assert_eq!(r.summary.metric.value, 60.0);
    // Everyone exits after the last answer, well before the second is out: 60 requests of
    // ~10 µs each through one server.
    assert!(r.summary.sim_time_s < 0.01, "{}", r.summary.sim_time_s);
}

#[test]
fn spawned_children_run_in_parallel_and_the_parent_waits() {
    let child = vec![Op::Run { cycles: Amount::Fixed(35e6), mem_frac: 0.0 }, count(0), Op::Exit]; // 10 ms at 3.5 GHz
    let parent = vec![Op::Spawn { program: 0, count: 4 }, Op::WaitChildren, count(1), Op::Exit];
    let r = run(
        "skylake-e3-1240v5",
        "userspace:scaling_setspeed=3500000",
        Programs { tasks: vec![parent], spawned: vec![child], devices: vec![] },
        1.0,
    );
    assert_eq!(r.summary.metric.value, 4.0);
    // Four children on four cores at once: the run ends when the last exits, about 10 ms in.
    assert!(r.summary.sim_time_s > 0.0099 && r.summary.sim_time_s < 0.0115, "{}", r.summary.sim_time_s);
}

#[test]
fn run_for_takes_fixed_time_whatever_the_frequency() {
    let fixed = vec![Op::RunFor { ns: Amount::Fixed(5e6) }, count(0), Op::Exit];
    let work = vec![Op::Run { cycles: Amount::Fixed(5e6 * 3.5), mem_frac: 0.0 }, count(0), Op::Exit];
    let t = |gov: &str, p: Vec<Op>| {
        run("skylake-e3-1240v5", gov, Programs { tasks: vec![p], spawned: vec![], devices: vec![] }, 1.0)
            .summary
            .sim_time_s
    };
    let (f_slow, f_fast) = (t("powersave", fixed.clone()), t("userspace:scaling_setspeed=3500000", fixed));
    assert!((f_slow - f_fast).abs() < 2e-4, "{f_slow} vs {f_fast}");
    let (w_slow, w_fast) = (t("powersave", work.clone()), t("userspace:scaling_setspeed=3500000", work));
    assert!(w_slow > 4.0 * w_fast, "{w_slow} vs {w_fast}");
}

#[test]
fn a_poll_takes_what_is_queued_and_goes_on_elsewhere_when_nothing_is() {
    // The sender posts three tokens at once, then ten ms later three more. The receiver waits
    // for a token (counting 1), takes the others queued without sleeping (counting 1,000
    // each), and, when none is left, waits again: two waits, each followed by two polls.
    let sender = vec![
        Op::Post { ch: 0, sync: false },
        Op::Post { ch: 0, sync: false },
        Op::Post { ch: 0, sync: false },
        Op::Sleep { ns: Amount::Fixed(10e6) },
        Op::Repeat { to: 0, times: 2 },
        Op::Exit,
    ];
    let polled = Op::Mark(Mark::Add { counter: 0, amount: 1000 });
    let receiver = vec![Op::Wait { ch: 0 }, count(0), Op::Poll { ch: 0, empty: 0 }, polled, Op::Jump { to: 2 }];
    let r = run(
        "skylake-e3-1240v5",
        "performance",
        Programs { tasks: vec![sender, receiver], spawned: vec![], devices: vec![] },
        0.1,
    );
    assert_eq!(r.summary.metric.value, 4_002.0, "one wait a batch, the rest of it polled");
    // A poll whose target is past the program's end is refused before the run.
    let plat = Platform::from_json(&common::preset("pixel6"), "pixel6").unwrap();
    let cfg = SimConfig { governor: "performance".into(), ..SimConfig::default() };
    let bad = Programs { tasks: vec![vec![Op::Poll { ch: 0, empty: 5 }, Op::Exit]], spawned: vec![], devices: vec![] };
    let err = Sim::with_workload(plat, &cfg, Box::new(bad), "test".into()).err().expect("an error").to_string();
    assert!(err.contains("op 0 goes on at 5"), "{err}");
}

#[test]
fn a_tcp_streams_short_writes_wait_for_the_readers_acknowledgement() {
    // Three 16 KiB writes: the first goes at once; Nagle's algorithm holds the others while
    // it is unacknowledged. The reader takes a message a call and acknowledges when a call
    // drains its queue. `tail` is what the writer does after its third write.
    let messages = |tail: Vec<Op>, duration_s: f64| {
        let write = Op::TcpSend { ch: 0, bytes: 16_384 };
        let mut writer = vec![write.clone(), write.clone(), write];
        writer.extend(tail);
        let reader = vec![Op::Wait { ch: 0 }, count(0), Op::TcpAck { ch: 0, call_bytes: 16_384 }, Op::Jump { to: 0 }];
        let w = Programs { tasks: vec![writer, reader], spawned: vec![], devices: vec![] };
        run("skylake-e3-1240v5", "performance", w, duration_s).summary.metric.value
    };
    // A writer that then sleeps has the acknowledgement processed at once: what it held goes
    // from the reader's side, and the reader gets all three.
    assert_eq!(messages(vec![Op::Wait { ch: 9 }, Op::Exit], 0.01), 3.0);
    // A writer still running (10 ms of work) takes the acknowledgement only at its next write:
    // until then the reader has the first message alone; that write sends a full segment
    // (the held 48 KiB and 16 KiB more) and, acknowledged, the rest.
    let busy = || {
        vec![
            Op::Run { cycles: Amount::Fixed(35e6), mem_frac: 0.0 },
            Op::TcpSend { ch: 0, bytes: 16_384 },
            Op::Wait { ch: 9 },
            Op::Exit,
        ]
    };
    assert_eq!(messages(busy(), 0.005), 1.0);
    assert_eq!(messages(busy(), 0.02), 4.0);
}

#[test]
fn malformed_programs_are_errors() {
    let plat = Platform::from_json(&common::preset("pixel6"), "pixel6").unwrap();
    let cfg = SimConfig { governor: "performance".into(), ..SimConfig::default() };
    let bad = Programs {
        tasks: vec![vec![Op::Io { dev: 3, service_ns: Amount::Fixed(1.0), transfer_ns: Amount::ZERO }, Op::Exit]],
        spawned: vec![],
        devices: vec![],
    };
    let err = Sim::with_workload(plat, &cfg, Box::new(bad), "test".into()).err().expect("an error").to_string();
    assert!(err.contains("device 3"), "{err}");
}

#[test]
fn pinned_tasks_stay_on_their_cpus() {
    let plat = Platform::from_json(&common::preset("skylake-e3-1240v5"), "s").unwrap();
    let program = vec![RUN_10US, Op::Sleep { ns: Amount::Fixed(5_000.0) }, count(0), Op::Jump { to: 0 }];
    let r = run_pinned(&plat, "performance", 100_000_000, (0..4).map(|_| (program.clone(), 5)).collect());
    for c in &r.summary.per_cpu {
        assert_eq!(c.busy_pct > 0.0, c.cpu == 5, "cpu {} busy {}", c.cpu, c.busy_pct);
    }
}

#[test]
fn rt_task_preempts_cfs_and_schedutil_goes_to_max() {
    use dvfslab_sim::workload::{SchedPolicy, TaskSpec};
    struct Mixed;
    impl Workload for Mixed {
        fn tasks(&self, _: &Platform) -> Vec<TaskSpec> {
            let hog: Rc<[Op]> =
                Rc::from(vec![Op::Run { cycles: Amount::Fixed(1e9), mem_frac: 0.0 }, Op::Jump { to: 0 }]);
            let rt: Rc<[Op]> = Rc::from(vec![
                Op::Mark(Mark::Start(0)),
                Op::Run { cycles: Amount::Fixed(1e6), mem_frac: 0.0 },
                Op::Mark(Mark::End(0)),
                Op::Sleep { ns: Amount::Fixed(10e6) },
                count(0),
                Op::Jump { to: 0 },
            ]);
            vec![
                TaskSpec::new("hog", hog).pinned(vec![0]),
                TaskSpec::new("rt", rt).pinned(vec![0]).policy(SchedPolicy::Fifo(50)).start_at(1_000_000),
            ]
        }
        fn default_duration_ns(&self) -> u64 {
            200_000_000
        }
        fn metric(&self, s: &RunStats) -> Metric {
            let lat = &s.latencies_ns[0];
            Metric {
                name: "max_ns".into(),
                value: *lat.iter().max().unwrap() as f64,
                unit: "ns".into(),
                better: Better::Lower,
            }
        }
    }
    let plat = Platform::from_json(&common::preset("pixel6"), "p").unwrap();
    let cfg = SimConfig { governor: "schedutil".into(), ..SimConfig::default() };
    let r = Sim::with_workload(plat, &cfg, Box::new(Mixed), "mixed".into()).unwrap().run().unwrap();
    // 1e6 cycles of work; the RT task never waits for the hog's slice: at the little core's
    // 1.8 GHz max it takes about 1e6 / (1803 MHz · 250/1024 µarch) ≈ 2.3 ms per activation,
    // plus the exit latency, and never a CFS time slice more.
    assert!(r.summary.metric.value < 2.6e6, "{}", r.summary.metric.value);
    assert!(r.summary.per_cpu[0].time_in_freq.contains_key("1803000"));
}

#[test]
fn cfs_tasks_of_one_vruntime_run_in_the_order_they_were_queued() {
    // An RT task on CPU 0 wakes two CFS tasks, the second one first; both wait behind it at
    // the same vruntime (they ran equally little, and nothing of the fair class since). When
    // it sleeps, CFS takes the one queued first (the kernel's tree puts an equal key after
    // those already there), not the lower id.
    use dvfslab_sim::workload::SchedPolicy;
    struct Woken;
    impl Workload for Woken {
        fn tasks(&self, _: &Platform) -> Vec<TaskSpec> {
            let rt: Rc<[Op]> = Rc::from(vec![
                Op::Sleep { ns: Amount::Fixed(1e6) },
                Op::Post { ch: 1, sync: false },
                Op::Post { ch: 0, sync: false },
                Op::Run { cycles: Amount::Fixed(1e5), mem_frac: 0.0 },
                Op::Sleep { ns: Amount::Fixed(1e7) },
                Op::Jump { to: 0 },
            ]);
            let fair = |ch: u32| -> Rc<[Op]> {
                Rc::from(vec![
                    Op::Wait { ch },
                    Op::Run { cycles: Amount::Fixed(1e4), mem_frac: 0.0 },
                    Op::Jump { to: 0 },
                ])
            };
            vec![
                TaskSpec::new("rt", rt).pinned(vec![0]).policy(SchedPolicy::Fifo(50)),
                TaskSpec::new("b", fair(0)).pinned(vec![0]),
                TaskSpec::new("c", fair(1)).pinned(vec![0]),
            ]
        }
        fn default_duration_ns(&self) -> u64 {
            5_000_000
        }
        fn metric(&self, _: &RunStats) -> Metric {
            Metric { name: "none".into(), value: 0.0, unit: "".into(), better: Better::Lower }
        }
    }
    for kernel in ["5.15", "6.18"] {
        let plat = Platform::from_json(&common::quiet_preset("kvm-guest-2cpu"), "kvm").unwrap();
        let cfg =
            SimConfig { governor: format!("performance:kernel={kernel}"), timeline: true, ..SimConfig::default() };
        let r = Sim::with_workload(plat, &cfg, Box::new(Woken), "woken".into()).unwrap().run().unwrap();
        let tl = r.timeline.expect("a timeline");
        // After the start, where each ran up to its wait in the order it was made.
        let first_fair = (0..tl.switch_next.len())
            .filter(|&i| tl.switch_time_ns[i] > 1_000_000)
            .map(|i| tl.switch_next[i])
            .find(|&t| t == 1 || t == 2)
            .expect("a fair task ran");
        assert_eq!(first_fair, 2, "at {kernel}: the task queued first runs first");
    }
}

#[test]
fn counted_loops_nest_and_channel_bases_separate_pairs() {
    // Inner loop 3 times inside an outer loop 4 times: 12 counts, then exit.
    let nested = vec![
        count(0),
        Op::Repeat { to: 0, times: 3 },
        Op::Run { cycles: Amount::Fixed(1000.0), mem_frac: 0.0 },
        Op::Repeat { to: 0, times: 4 },
        Op::Exit,
    ];
    let r = run("pixel6", "performance", Programs { tasks: vec![nested], spawned: vec![], devices: vec![] }, 0.1);
    assert_eq!(r.summary.metric.value, 12.0);

    // Two ping-pong pairs on one program each side, kept apart by their channel bases.
    use dvfslab_sim::workload::TaskSpec;
    struct Pairs;
    impl Workload for Pairs {
        fn tasks(&self, _: &Platform) -> Vec<TaskSpec> {
            let client: Rc<[Op]> = Rc::from(vec![
                RUN_10US,
                Op::Post { ch: 0, sync: true },
                Op::Wait { ch: 1 },
                count(0),
                Op::Repeat { to: 0, times: 100 },
                Op::Exit,
            ]);
            let server: Rc<[Op]> =
                Rc::from(vec![Op::Wait { ch: 0 }, RUN_10US, Op::Post { ch: 1, sync: true }, Op::Jump { to: 0 }]);
            (0..2)
                .flat_map(|i| {
                    [
                        TaskSpec::new(format!("c{i}"), client.clone()).channel_base(2 * i),
                        TaskSpec::new(format!("s{i}"), server.clone()).channel_base(2 * i),
                    ]
                })
                .collect()
        }
        fn default_duration_ns(&self) -> u64 {
            1_000_000_000
        }
        fn metric(&self, s: &RunStats) -> Metric {
            Metric { name: "n".into(), value: s.counters[0] as f64, unit: "ops".into(), better: Better::Higher }
        }
    }
    let plat = Platform::from_json(&common::preset("skylake-e3-1240v5"), "s").unwrap();
    let cfg = SimConfig { governor: "performance".into(), ..SimConfig::default() };
    let r = Sim::with_workload(plat, &cfg, Box::new(Pairs), "pairs".into()).unwrap().run().unwrap();
    assert_eq!(r.summary.metric.value, 200.0, "each client completes its 100 round trips");
}

#[test]
fn an_idle_core_drops_out_of_the_shared_frequency_vote() {
    // Skylake's cores share one clock, which runs the highest request among *active* cores.
    // Task A runs flat out on CPU 0 for 40 ms (schedutil climbs to the top), then sleeps in a
    // deep state; task B on CPU 1 (another core) runs 0.5 ms every 10 ms and asks for the
    // lowest P-state. Once A's core is inactive its stale request must not hold B up.
    let pin = |cpu: usize| Op::SetAffinity { cpus: Some(Rc::from(vec![cpu])) };
    let busy = vec![
        pin(0),
        Op::Run { cycles: Amount::Fixed(140e6), mem_frac: 0.0 },
        Op::Sleep { ns: Amount::Fixed(10e9) },
        Op::Exit,
    ];
    let light = vec![
        pin(1),
        Op::Run { cycles: Amount::Fixed(1.75e6), mem_frac: 0.0 },
        Op::Sleep { ns: Amount::Fixed(10e6) },
        Op::Jump { to: 1 },
    ];
    let r = run(
        "skylake-e3-1240v5",
        "schedutil",
        Programs { tasks: vec![busy, light], spawned: vec![], devices: vec![] },
        1.0,
    );
    let cpu = |n: usize| r.summary.per_cpu.iter().find(|c| c.cpu == n).unwrap();
    assert!(cpu(0).avg_freq_khz > 2_800_000.0, "A ran high: {}", cpu(0).avg_freq_khz);
    assert!(
        cpu(1).avg_freq_khz < 1_500_000.0,
        "B ran low: {} {:?} {}",
        cpu(1).avg_freq_khz,
        cpu(1).time_in_freq,
        cpu(1).busy_pct
    );
}

#[test]
fn only_a_commits_leader_wakes_in_iowait_and_nobody_after_a_log_force() {
    // Four tasks on four cores loop over a 1 ms flush and 50 µs of work. Under group commit
    // the task that submitted a commit waits for the device (io_schedule: iowait); the ones
    // that joined it wait for the commit to finish (a lock, as PostgreSQL's backends wait on
    // WALWriteLock), so schedutil sees no iowait boost for them. After a filesystem's log
    // force nobody was in io_schedule: a kernel worker wrote the log.
    let boosted_cpus = |service: Service| {
        let task = |cpu: usize| {
            vec![
                Op::SetAffinity { cpus: Some(Rc::from(vec![cpu])) },
                Op::Io { dev: 0, service_ns: Amount::Fixed(1_000_000.0), transfer_ns: Amount::ZERO },
                Op::Run { cycles: Amount::Fixed(115_000.0), mem_frac: 0.0 },
                count(0),
                Op::Jump { to: 1 },
            ]
        };
        let w = Programs {
            tasks: (0..4).map(task).collect(),
            spawned: vec![],
            devices: vec![DeviceSpec {
                name: "journal".into(),
                queue_depth: 1,
                service,
                completion: Completion::Submitter,
            }],
        };
        let r = run_explained("haswell-e5-2670v3-2s", "schedutil:kernel=5.9", w, 0.2);
        let boosted =
            |d: &&dvfslab_sim::observe::Decision| d.inputs.iter().any(|&(k, v)| k == "iowait_boost" && v > 0.0);
        let mut cpus: Vec<usize> = r
            .decisions
            .unwrap()
            .iter()
            .filter(boosted)
            .filter_map(|d| d.inputs.iter().find(|(k, _)| *k == "cpu").map(|&(_, v)| v as usize))
            .collect();
        cpus.sort_unstable();
        cpus.dedup();
        cpus
    };
    assert_eq!(boosted_cpus(Service::Queued), vec![0, 1, 2, 3]);
    let leaders = boosted_cpus(Service::GroupCommit { leader_iowait: true });
    assert!(!leaders.is_empty() && leaders.len() < 4, "{leaders:?}");
    assert!(boosted_cpus(Service::GroupCommit { leader_iowait: false }).is_empty());
}

#[test]
fn exec_moves_a_new_child_to_an_idler_cpu_before_5_5_and_a_pinned_one_stays() {
    // A child forked onto an idle core carries its own new load there; before 5.5, at exec,
    // balancing finds another idle core with none and moves it, once. Since 5.5 its core
    // counts as idle without it: no other has more idle CPUs, it stays. Pinned, it stays.
    let child = |pin: Option<Rc<[usize]>>| {
        let mut p = vec![];
        if let Some(cpus) = pin {
            p.push(Op::SetAffinity { cpus: Some(cpus) });
        }
        p.extend([
            Op::Exec { comm: "child" },
            Op::Run { cycles: Amount::Fixed(3.5e6), mem_frac: 0.0 },
            count(0),
            Op::Exit,
        ]);
        p
    };
    let parent = vec![Op::Spawn { program: 0, count: 1 }, Op::WaitChildren, Op::Exit];
    let moves_at = |spawned: Vec<Op>, governor: &str| {
        let plat = Platform::from_json(&common::preset("haswell-e5-2670v3-2s"), "haswell").unwrap();
        let cfg = SimConfig { governor: governor.into(), explain: true, ..SimConfig::default() };
        let w = Programs { tasks: vec![parent.clone()], spawned: vec![spawned], devices: vec![] };
        let r = Sim::with_workload(plat, &cfg, Box::new(w), "test".into()).unwrap().run().unwrap();
        assert_eq!(r.summary.metric.value, 1.0);
        r.migrations.unwrap().into_iter().filter(|m| m.reason == "exec").collect::<Vec<_>>()
    };
    let moves = |spawned: Vec<Op>| moves_at(spawned, "performance:kernel=5.4");
    let free = moves(child(None));
    assert_eq!(free.len(), 1, "{free:?}");
    assert_ne!(free[0].src_cpu, free[0].dst_cpu);
    // The pinned child may not leave: no exec move at all.
    let pinned = moves(child(Some(Rc::from(vec![5]))));
    assert!(pinned.is_empty(), "{pinned:?}");
    // Since 5.5 the child alone on its idle core stays.
    let stays = moves_at(child(None), "performance:kernel=5.5");
    assert!(stays.is_empty(), "{stays:?}");
}

#[test]
fn siblings_saturating_one_core_spread_to_an_idle_core_only_once_the_imbalance_persists() {
    // Two CPU-bound tasks start pinned to the two SMT threads of core 0, then may run anywhere.
    // The other cores idle, so the balancer moves one of them, but by active balance: not at
    // the first attempt that finds the imbalance, only after three more failed ones at the
    // cache-sharing level's doubled interval (8 CPUs: 16 ms each, 48 ms after the first).
    let plat = Platform::from_json(&common::preset("skylake-e3-1240v5"), "skylake").unwrap();
    let siblings = plat.cores[0].cpus.clone();
    assert_eq!(siblings.len(), 2);
    let released_ns = 100_000_000;
    let spinner = |cpu: usize| {
        vec![
            Op::SetAffinity { cpus: Some(Rc::from(vec![cpu])) },
            Op::RunFor { ns: Amount::Fixed(released_ns as f64) },
            Op::SetAffinity { cpus: None },
            Op::Run { cycles: Amount::Fixed(1e10), mem_frac: 0.0 },
            Op::Exit,
        ]
    };
    let w = Programs { tasks: siblings.iter().map(|&c| spinner(c)).collect(), spawned: vec![], devices: vec![] };
    let r = run_explained("skylake-e3-1240v5", "userspace:scaling_setspeed=3500000", w, 0.4);
    let spreads: Vec<_> = r.migrations.unwrap().into_iter().filter(|m| m.reason == "spread").collect();
    assert_eq!(spreads.len(), 1, "{spreads:?}");
    assert!(siblings.contains(&spreads[0].src_cpu) && !siblings.contains(&spreads[0].dst_cpu));
    let waited_ms = (spreads[0].time_ns - released_ns) as f64 / 1e6;
    assert!((48.0..=60.0).contains(&waited_ms), "moved {waited_ms} ms after the release");
}

/// A request/response pair made to share CPU 0 of the quiet 2-CPU guest for `shared_ms` each,
/// then free. Each side works 10 µs, wakes the other with `send` (a loopback send, from its
/// softirq, as `netperf:test=tcp-rr` does, or a pipe write), runs the send's last 2 µs and
/// blocks for the answer. Returns the run with its migrations.
fn pair_sharing_cpu0(shared_ms: f64, duration_s: f64, send: fn(u32) -> Op) -> SimResult {
    let run = |cycles: f64| Op::Run { cycles: Amount::Fixed(cycles), mem_frac: 0.0 };
    let start = |mut p: Vec<Op>| {
        let mut v = vec![
            Op::SetAffinity { cpus: Some(Rc::from(vec![0])) },
            Op::RunFor { ns: Amount::Fixed(shared_ms * 1e6) },
            Op::SetAffinity { cpus: None },
        ];
        v.append(&mut p);
        v
    };
    let client = start(vec![
        run(26_000.0),
        send(0),
        run(5_200.0),
        Op::Wait { ch: 1 },
        Op::Mark(Mark::Add { counter: 0, amount: 1 }),
        Op::Jump { to: 3 },
    ]);
    let server = start(vec![Op::Wait { ch: 0 }, run(26_000.0), send(1), run(5_200.0), Op::Jump { to: 3 }]);
    let w = Programs { tasks: vec![client, server], spawned: vec![], devices: vec![] };
    let plat = Platform::from_json(&common::quiet_preset("kvm-guest-2cpu"), "kvm").unwrap();
    let cfg = SimConfig {
        governor: "performance:kernel=6.18".into(),
        duration_ns: Some((duration_s * 1e9) as u64),
        explain: true,
        ..SimConfig::default()
    };
    Sim::with_workload(plat, &cfg, Box::new(w), "test".into()).unwrap().run().unwrap()
}

#[test]
fn a_pair_kept_on_one_cpu_by_delayed_dequeue_is_split_by_the_idle_balancer() {
    // Pipe writes: the woken side preempts the writer at once. Each side runs its 5 ms pinned
    // on the shared CPU, so both are free from 10 ms, on CPU 0
    // with CPU 1 idle. At 6.18 each blocks while the other is queued, so its dequeue is
    // delayed and the other's send wakes it in place (ttwu_runnable): wake-up placement never
    // sees it. The guest ticks every 4 ms (HZ=250); each tick that finds two tasks kicks a
    // balance attempt (the 2-CPU domain's 2 ms interval is shorter), which fails: the running
    // task cannot be pulled, the other is delayed or cache-hot. After 2 failures a hot waiting
    // task may go, after 4 the running one (cache_nice_tries 1, + 2): by the 5th tick, 20 ms.
    let r = pair_sharing_cpu0(5.0, 0.1, |ch| Op::Post { ch, sync: true });
    let moved: Vec<Migration> =
        r.migrations.unwrap().into_iter().filter(|m| m.reason == "push" || m.reason == "active").collect();
    assert_eq!(moved.len(), 1, "the pair is split once and stays apart: {moved:?}");
    let waited_ms = (moved[0].time_ns as f64 - 10e6) / 1e6;
    assert!((0.0..=20.0).contains(&waited_ms), "split {waited_ms} ms after the release");
    assert_eq!((moved[0].src_cpu, moved[0].dst_cpu), (0, 1));
}

#[test]
fn a_loopback_pair_on_one_cpu_stays_together_until_the_idle_balancer_splits_it() {
    // Loopback sends: the woken side preempts the sender only where the send returns to user
    // mode, and the sender's time after the wake-up's last clock update is charged to the woken
    // side (the skipped clock update), so the pick at that switch sees the sender without it.
    // As with pipes, each side then blocks while the other is queued and ahead of it: its
    // dequeue is delayed, the other's send wakes it in place, and wake-up placement never
    // sees it; the idle balancer splits the pair at its fifth tick (20 ms). (Charged with the
    // skipped time at that pick, the sender was sometimes the one owed time, blocked while
    // eligible and was parted by a wake-up instead: not the kernel's order.)
    let r = pair_sharing_cpu0(5.0, 0.1, |ch| Op::Loopback { ch, sync: true });
    let moved: Vec<Migration> = r.migrations.unwrap().into_iter().filter(|m| m.time_ns > 10_000_000).collect();
    assert_eq!(moved.len(), 1, "the pair is parted once and stays apart: {moved:?}");
    assert!(moved[0].reason == "push" || moved[0].reason == "active", "{moved:?}");
    assert_eq!((moved[0].src_cpu, moved[0].dst_cpu), (0, 1));
    assert!(moved[0].time_ns <= 30_000_000, "parted at {} ns", moved[0].time_ns);
}

/// Tasks that run pinned to `cpus` for 100 ms, then anywhere; each then repeats `work`.
fn pinned_then_free(cpus: &[usize], work: Vec<Op>) -> Vec<Vec<Op>> {
    cpus.iter()
        .map(|&cpu| {
            let mut p = vec![
                Op::SetAffinity { cpus: Some(Rc::from(vec![cpu])) },
                Op::RunFor { ns: Amount::Fixed(100e6) },
                Op::SetAffinity { cpus: None },
            ];
            p.extend(work.clone());
            p.push(Op::Jump { to: 3 });
            p
        })
        .collect()
}

#[test]
fn active_balancing_before_5_5_moves_the_lighter_of_two_siblings_and_since_the_first() {
    // A thread that never sleeps shares core 0 with one that sleeps a fifth of the time; the
    // other cores idle. The balancer of Linux before 5.5 skips a run-queue whose lone task
    // carries more load than the imbalance, so the lighter thread moves; since 5.5 it moves a
    // task from the first run-queue with the most tasks, the first sibling's: the saturated one.
    let plat = Platform::from_json(&common::preset("skylake-e3-1240v5"), "skylake").unwrap();
    let siblings = plat.cores[0].cpus.clone();
    let moved_tasks = |kernel: &str| {
        let mut tasks = pinned_then_free(&siblings[..1], vec![Op::RunFor { ns: Amount::Fixed(10e6) }]);
        tasks.extend(pinned_then_free(
            &siblings[1..],
            vec![Op::RunFor { ns: Amount::Fixed(8e6) }, Op::Sleep { ns: Amount::Fixed(2e6) }],
        ));
        let w = Programs { tasks, spawned: vec![], devices: vec![] };
        let governor = format!("userspace:scaling_setspeed=3500000,kernel={kernel}");
        let r = run_explained("skylake-e3-1240v5", &governor, w, 1.0);
        let spreads: Vec<_> = r.migrations.unwrap().into_iter().filter(|m| m.reason == "spread").collect();
        spreads.iter().map(|m| m.task).collect::<Vec<_>>()
    };
    assert_eq!(moved_tasks("5.2"), vec![1]);
    assert_eq!(moved_tasks("6.6"), vec![0]);
}

#[test]
fn cfs_calls_the_governor_once_a_pelt_period_however_often_tasks_switch() {
    // Two tasks pinned to one CPU hand a token back and forth every ~10 µs, so the CPU never
    // idles and its util climbs past the 80% that makes non-invariant schedutil step up 25%
    // at every evaluation. CFS calls the governor only when the run-queue's PELT signal
    // crossed a 1024-µs period since the last call, so with no rate limit the steps still
    // come about a millisecond apart: seven of them from 800 MHz to 3.9 GHz, not seven in
    // 100 µs.
    let pinned = |first: Vec<Op>| {
        let mut p = vec![Op::SetAffinity { cpus: Some(Rc::from(vec![0])) }];
        p.extend(first);
        p.push(Op::Jump { to: 1 });
        p
    };
    let client = pinned(vec![RUN_10US, Op::Post { ch: 0, sync: true }, Op::Wait { ch: 1 }]);
    let server = pinned(vec![Op::Wait { ch: 0 }, RUN_10US, Op::Post { ch: 1, sync: true }]);
    let w = Programs { tasks: vec![client, server], spawned: vec![], devices: vec![] };
    let r = run_explained("skylake-e3-1240v5", "schedutil:invariant=0,rate_limit_us=0,kernel=5.2", w, 0.06);
    let cpu0: Vec<_> =
        r.decisions.unwrap().into_iter().filter(|d| d.inputs.iter().any(|&(k, v)| k == "cpu" && v == 0.0)).collect();
    let ups = cpu0.windows(2).filter(|w| w[1].resolved_khz > w[0].resolved_khz).count();
    assert!(ups >= 5, "{} decisions, {ups} steps up", cpu0.len());
    let times: Vec<u64> = cpu0.iter().map(|d| d.time_ns).collect();
    assert!(times.windows(2).all(|w| w[1] - w[0] >= 900_000), "{times:?}");
}

#[test]
fn a_cpu_with_a_task_asleep_in_iowait_stays_out_of_slow_exits() {
    // A task pinned to CPU 0 waits 1 ms for each I/O. The menu governor before 6.13 lets a CPU
    // with n tasks asleep in iowait use only states whose exit latency is at most the
    // predicted idle time / (1 + 10·n): 1 ms / 11 ≈ 91 µs, so C6 (85 µs exit) rather than C8
    // (200 µs), whose 800-µs target residency the idle period would allow. 6.13 dropped the rule.
    let task = vec![
        Op::SetAffinity { cpus: Some(Rc::from(vec![0])) },
        Op::Io { dev: 0, service_ns: Amount::Fixed(1_000_000.0), transfer_ns: Amount::ZERO },
        RUN_10US,
        count(0),
        Op::Jump { to: 1 },
    ];
    let idle_in = |kernel: &str, state: &str| {
        let w = Programs {
            tasks: vec![task.clone()],
            spawned: vec![],
            devices: vec![DeviceSpec {
                name: "disk".into(),
                queue_depth: 1,
                service: Service::Queued,
                completion: Completion::Submitter,
            }],
        };
        let r = run("skylake-e3-1240v5", &format!("performance:kernel={kernel}"), w, 0.2);
        r.summary.per_cpu[0].time_in_idle_state[state].as_f64().unwrap()
    };
    assert!(idle_in("5.2", "C6") > 0.15 && idle_in("5.2", "C8") < 0.01);
    // From 4.17 a CPU that expects less than a tick keeps it and takes no state whose target
    // residency outlasts the next tick: C8 (800 µs) loses the idle periods that start within
    // 800 µs of a tick (a fifth at HZ=250) to C6.
    let (c8, c6) = (idle_in("6.13", "C8"), idle_in("6.13", "C6"));
    assert!(c8 > 0.1 && c6 > 0.01 && c8 > 3.0 * c6, "C8 {c8} s, C6 {c6} s");
}

#[test]
fn a_cpu_expecting_less_than_c1s_residency_polls() {
    // A sender posts every `gap_us` (plus 1 µs of its own work); the receiver works 1 µs per
    // token, so it sleeps about `gap_us` each time. Skylake's C1 has a 2 µs target residency
    // and exit latency: since 5.0 menu keeps a CPU that expects less than that polling.
    let run_us = |us: f64| Op::Run { cycles: Amount::Fixed(us * 3.5e3), mem_frac: 0.0 };
    let idle = |gap_us: f64, kernel: &str| {
        let sender = vec![run_us(1.0 + gap_us), Op::Post { ch: 0, sync: false }, Op::Jump { to: 0 }];
        let receiver = vec![Op::Wait { ch: 0 }, run_us(1.0), count(0), Op::Jump { to: 0 }];
        let w = Programs { tasks: vec![sender, receiver], spawned: vec![], devices: vec![] };
        let gov = format!("userspace:scaling_setspeed=3500000,kernel={kernel}");
        let r = run("skylake-e3-1240v5", &gov, w, 0.05).summary;
        let in_state = |name: &str| -> f64 {
            r.per_cpu.iter().map(|c| c.time_in_idle_state.get(name).and_then(|v| v.as_f64()).unwrap_or(0.0)).sum()
        };
        (in_state("POLL"), in_state("C1"), r.metric.value)
    };
    let (poll, c1, polled) = idle(1.0, "5.2");
    assert!(poll > 0.01 && c1 < 0.1 * poll, "POLL {poll} s, C1 {c1} s");
    let (poll, c1, _) = idle(10.0, "5.2");
    assert!(c1 > 0.01 && poll < 0.1 * c1, "POLL {poll} s, C1 {c1} s");
    // Before 5.0 only a timer due within 20 µs kept a CPU polling: here it goes to C1, and
    // the 2 µs exit on each wake-up leaves it behind the sender until a backlog builds, which
    // costs it at most a token: both receivers keep up with the sender (one token per 2 µs).
    // (4.17+: menu also polls when the next tick is nearer than C1's residency.)
    let (poll, c1, halted) = idle(1.0, "4.19");
    assert!(c1 > 0.001 && poll < 0.01 * c1, "POLL {poll} s, C1 {c1} s");
    assert!(polled >= halted && halted > 0.99 * 0.05 / 2e-6, "{polled} tokens polling against {halted} halting");
}

/// One task pinned to `cpu`, looping: a 1 ms I/O on a device completing as `completion` says,
/// then 100 µs of work at 3 GHz.
struct PinnedIo {
    cpu: usize,
    completion: Completion,
}

impl Workload for PinnedIo {
    fn tasks(&self, _: &Platform) -> Vec<TaskSpec> {
        let program = vec![
            Op::Io { dev: 0, service_ns: Amount::Fixed(1_000_000.0), transfer_ns: Amount::ZERO },
            Op::Run { cycles: Amount::Fixed(300_000.0), mem_frac: 0.0 },
            count(0),
            Op::Jump { to: 0 },
        ];
        vec![TaskSpec::new("io", Rc::from(program)).pinned(vec![self.cpu])]
    }
    fn devices(&self) -> Vec<DeviceSpec> {
        vec![common::queued_disk(1, self.completion)]
    }
    fn default_duration_ns(&self) -> u64 {
        1_000_000_000
    }
    fn metric(&self, stats: &RunStats) -> Metric {
        Metric { name: "count".into(), value: stats.counters[0] as f64, unit: "ops".into(), better: Better::Higher }
    }
}

#[test]
fn a_completion_on_cpu_zero_wakes_a_task_of_its_llc_remotely_and_intel_pstate_misses_the_boost() {
    // Haswell: CPUs 0-11 on the first socket, 12-23 on the second.
    let busy_khz = |cpu: usize, completion: Completion| {
        let plat = Platform::from_json(&common::preset("haswell-e5-2670v3-2s"), "haswell").unwrap();
        let cfg = SimConfig {
            governor: "intel_pstate:algorithm=load,kernel=5.2".into(),
            duration_ns: Some(300_000_000),
            ..SimConfig::default()
        };
        let w = Box::new(PinnedIo { cpu, completion });
        let r = Sim::with_workload(plat, &cfg, w, "test".into()).unwrap().run().unwrap();
        r.summary.per_cpu[cpu].avg_freq_khz
    };
    // Woken on its own CPU, every wake-up carries the iowait flag to intel_pstate, which goes
    // to the top at once; woken from CPU 0, none does, and a CPU busy a tenth of the time
    // stays near the bottom.
    let local = busy_khz(2, Completion::Submitter);
    let from_cpu0 = busy_khz(2, Completion::Line { cpu: 0, coalesced: false });
    assert!(from_cpu0 < 0.6 * local, "CPU 0's completions {from_cpu0} kHz, local {local} kHz");
    // On the other socket blk-mq sends the completion to the submitter: local again.
    let other_socket = busy_khz(14, Completion::Line { cpu: 0, coalesced: false });
    assert!((other_socket - local).abs() < 0.05 * local, "{other_socket} vs {local} kHz");
}

#[test]
fn a_thread_woken_beside_its_running_sibling_finds_the_core_awake() {
    let id = "haswell-e5-2670v3-2s";
    let plat = Platform::from_json(&common::preset_without_sched_costs(id), id).unwrap();
    let core0 = plat.cores[0].cpus.clone();
    let other_core = plat.cores[1].cpus[0];
    assert_eq!(core0.len(), 2, "the preset has two threads per core");
    let round_trips = |cpus: [usize; 2]| {
        let client = vec![RUN_10US, Op::Post { ch: 0, sync: true }, Op::Wait { ch: 1 }, count(0), Op::Jump { to: 0 }];
        let server = vec![Op::Wait { ch: 0 }, RUN_10US, Op::Post { ch: 1, sync: true }, Op::Jump { to: 0 }];
        run_pinned(&plat, "performance", 100_000_000, vec![(client, cpus[0]), (server, cpus[1])]).summary.metric.value
    };
    // Each side wakes the other while it still runs (a sync wake-up, then the waker blocks).
    // On two cores every wake-up leaves C1 (2 µs): two bursts of 23k cycles at the 2-core
    // turbo of 3.1 GHz (7.4 µs each) plus two exits, 18.8 µs a round trip. On one core's two
    // threads the core is in C0 at each wake-up: no exit, 14.8 µs.
    let apart = round_trips([core0[0], other_core]);
    let siblings = round_trips([core0[0], core0[1]]);
    assert!(apart < 100e-3 / 17.0e-6, "two cores: {apart}");
    assert!(siblings > 100e-3 / 16.0e-6, "one core's threads: {siblings}");
}

/// A task pinned to `cpu` that sleeps 2 ms and runs 10 µs, over and over, optionally beside a
/// CPU-bound task pinned to `spinner`; the metric is the sleeper's wake-ups.
fn sleeper(cpu: usize, spinner: Option<usize>) -> Vec<(Vec<Op>, usize)> {
    let sleep = vec![Op::Sleep { ns: Amount::Fixed(2_000_000.0) }, RUN_10US, count(0), Op::Jump { to: 0 }];
    let spin = vec![Op::Run { cycles: Amount::Fixed(1e9), mem_frac: 0.0 }, Op::Jump { to: 0 }];
    std::iter::once((sleep, cpu)).chain(spinner.map(|c| (spin, c))).collect()
}

#[test]
fn a_core_leaves_its_deep_state_faster_while_its_package_is_awake() {
    let id = "epyc7742-2s";
    let plat = Platform::from_json(&common::preset(id), id).unwrap();
    let cores = &plat.packages[0].cores;
    let (cpu, other) = (plat.cores[cores[0]].cpus[0], plat.cores[cores[1]].cpus[0]);
    let deep = plat.cluster(0).idle_states.last().unwrap();
    let (table_us, awake_us) = (deep.exit_latency_us, deep.exit_latency_pkg_awake_us.unwrap());
    assert!(awake_us < table_us / 10.0, "the preset's measured exit {awake_us} µs, table {table_us} µs");
    let wake_ups = |spinner: Option<usize>| {
        run_pinned(&plat, "performance", 100_000_000, sleeper(cpu, spinner)).summary.metric.value
    };
    // Each cycle is the 2-ms sleep, the exit and 10 µs of work (under 5 µs at the boost clock).
    let cycles = |exit_us: f64| 100e3 / (2_000.0 + exit_us + 5.0);
    // Alone, the sleeper finds its whole package (and the other) asleep: the table's exit.
    let alone = wake_ups(None);
    assert!((alone - cycles(table_us)).abs() <= 2.0, "alone: {alone}, expected {}", cycles(table_us));
    // Beside a busy core the package stays awake, and the core pays its measured exit.
    let beside = wake_ups(Some(other));
    assert!((beside - cycles(awake_us)).abs() <= 2.0, "beside: {beside}, expected {}", cycles(awake_us));
    // Rome's packages idle only together: a busy core on the other socket keeps this one's
    // package awake too.
    let remote = plat.cores[plat.packages[1].cores[0]].cpus[0];
    let across = wake_ups(Some(remote));
    assert!((across - cycles(awake_us)).abs() <= 2.0, "other socket: {across}, expected {}", cycles(awake_us));
}

#[test]
fn rome_packages_idle_only_together() {
    let id = "epyc7742-2s";
    let plat = Platform::from_json(&common::preset(id), id).unwrap();
    let busy = plat.cores[plat.packages[0].cores[0]].cpus[0];
    let run = |plat: &Platform| run_pinned(plat, "performance", 50_000_000, sleeper(busy, None)).summary;
    // One core wakes every 2 ms on socket 0. System-wide, socket 1 idles only while socket 0
    // does; each package on its own, socket 1 idles the whole run.
    let together = run(&plat);
    let mut apart_plat = plat.clone();
    apart_plat.file.package_power.idle_scope = dvfslab_sim::hw::platform::IdleScope::Package;
    let apart = run(&apart_plat);
    let idle = |r: &dvfslab_sim::result::RunJson, p: usize| r.packages[p].idle_s;
    assert!((idle(&apart, 1) - 0.05).abs() < 1e-9, "apart: socket 1 idle {} s", idle(&apart, 1));
    assert!(
        (idle(&together, 1) - idle(&together, 0)).abs() < 1e-9,
        "together: {} vs {}",
        idle(&together, 1),
        idle(&together, 0)
    );
    assert!(idle(&together, 0) > 0.025, "socket 0 idles between wake-ups: {} s", idle(&together, 0));
    // Awake, socket 1's uncore draws its active power instead of the package-idle power.
    let pp = &plat.file.package_power;
    let extra_w = (pp.p_uncore_active_w - pp.p_pkg_idle_w) * (0.05 - idle(&together, 1)) / 0.05;
    let gained = together.packages[1].avg_w - apart.packages[1].avg_w;
    assert!((gained - extra_w).abs() < 0.5, "socket 1 drew {gained} W more, expected {extra_w} W");
}

/// One core's two threads: the first runs 20 ms flat out and then sleeps for good, the second
/// wakes every millisecond for 10 µs of work (counted).
fn stale_sibling(threads: [usize; 2]) -> Vec<(Vec<Op>, usize)> {
    let burst = vec![
        Op::Run { cycles: Amount::Fixed(46e6), mem_frac: 0.0 }, // 20 ms at 2.3 GHz
        Op::Sleep { ns: Amount::Fixed(1e12) },
        Op::Exit,
    ];
    let ticker = vec![Op::Sleep { ns: Amount::Fixed(1_000_000.0) }, RUN_10US, count(0), Op::Jump { to: 0 }];
    vec![(burst, threads[0]), (ticker, threads[1])]
}

#[test]
fn an_idle_thread_holds_its_core_at_its_request_on_rome_but_not_on_intel() {
    let id = "haswell-e5-2670v3-2s";
    let intel = Platform::from_json(&common::preset(id), id).unwrap();
    let threads = [intel.cores[0].cpus[0], intel.cores[0].cpus[1]];
    let ticker_mhz = |plat: &Platform| {
        let governor = "schedutil:invariant=1,kernel=5.2,driver=intel_cpufreq";
        let r = run_pinned(plat, governor, 300_000_000, stale_sibling(threads));
        r.summary.per_cpu[threads[1]].avg_freq_khz / 1000.0
    };
    // The burst's thread leaves its request at the top and sleeps in C6. On Intel it no longer
    // votes: the core follows the ticker's own low request.
    let alone = ticker_mhz(&intel);
    assert!(alone < 1_500.0, "Intel: the ticker's core at {alone} MHz");
    // With Rome's rule the sleeping thread's stale request (about 2.3 GHz when it went to
    // sleep) keeps holding the core.
    let mut rome_rule = intel.clone();
    rome_rule.file.clusters[0].frequency.power_gated_cpus_vote = true;
    let held = ticker_mhz(&rome_rule);
    assert!(held > 2_000.0, "idle threads voting: the ticker's core at {held} MHz");
}

/// The NUMA balancer's moves of a run on Haswell (two 12-core nodes) under `kernel`.
fn numa_moves(tasks: Vec<Vec<Op>>, kernel: &str, duration_s: f64) -> Vec<Migration> {
    let governor = format!("userspace:scaling_setspeed=2300000,kernel={kernel}");
    let w = Programs { tasks, spawned: vec![], devices: vec![] };
    let r = run_explained("haswell-e5-2670v3-2s", &governor, w, duration_s);
    r.migrations.unwrap().into_iter().filter(|m| m.reason == "numa").collect()
}

#[test]
fn a_busy_pair_on_one_node_is_pushed_apart_before_5_6_and_tolerated_since() {
    // Two saturated tasks on two cores of node 0, node 1 idle. Before 5.6 the NUMA balancer
    // (48 CPUs: every 48 ms) fails four times on the lone running tasks, then moves one by
    // active balance at its fifth attempt: 192–240 ms after the release, depending on where
    // the first attempt falls. Since 5.6 two tasks are a tolerated imbalance.
    let plat = Platform::from_json(&common::preset("haswell-e5-2670v3-2s"), "haswell").unwrap();
    let node0 = &plat.packages[0].cpus;
    let work = vec![Op::RunFor { ns: Amount::Fixed(10e6) }];
    let moves = numa_moves(pinned_then_free(&[node0[0], node0[1]], work.clone()), "5.2", 0.6);
    assert_eq!(moves.len(), 1, "{moves:?}");
    assert!(node0.contains(&moves[0].src_cpu) && plat.packages[1].cpus.contains(&moves[0].dst_cpu));
    let waited_ms = (moves[0].time_ns - 100_000_000) as f64 / 1e6;
    assert!((192.0..=244.0).contains(&waited_ms), "moved {waited_ms} ms after the release");
    assert!(numa_moves(pinned_then_free(&[node0[0], node0[1]], work.clone()), "5.6", 0.6).is_empty());
    // Three tasks are more than 5.6 tolerates: one moves (and 2 against 1 is balanced).
    let three = numa_moves(pinned_then_free(&[node0[0], node0[1], node0[2]], work), "5.6", 0.6);
    assert_eq!(three.len(), 1, "{three:?}");
}

#[test]
fn the_numa_balancer_before_5_5_moves_the_lighter_of_two_lone_tasks() {
    // Of a saturated task and one that sleeps a tenth of the time, Linux 5.2's busiest
    // run-queue is the lighter one: the saturated task's load exceeds the imbalance. (An
    // attempt that finds the lighter task asleep finds the nodes balanced and resets the
    // failures, so the move waits for five attempts in a row that find it running.)
    let plat = Platform::from_json(&common::preset("haswell-e5-2670v3-2s"), "haswell").unwrap();
    let node0 = &plat.packages[0].cpus;
    let mut tasks = pinned_then_free(&[node0[0]], vec![Op::RunFor { ns: Amount::Fixed(10e6) }]);
    tasks.extend(pinned_then_free(
        &[node0[1]],
        vec![Op::RunFor { ns: Amount::Fixed(0.93e6) }, Op::Sleep { ns: Amount::Fixed(0.1e6) }],
    ));
    let moves = numa_moves(tasks, "5.2", 1.0);
    assert!(!moves.is_empty());
    assert_eq!(moves[0].task, 1, "{moves:?}");
}

/// `w` on the kvm guest's two CPUs under performance for `duration_s`, with its timeline.
fn run_traced(w: Programs, duration_s: f64) -> dvfslab_sim::observe::Timeline {
    run_traced_on(&common::quiet_preset("kvm-guest-2cpu"), w, duration_s)
}

/// [`run_traced`] on the preset `json`.
fn run_traced_on(json: &str, w: Programs, duration_s: f64) -> dvfslab_sim::observe::Timeline {
    run_traced_at(json, "performance", w, duration_s)
}

/// [`run_traced`] on the preset `json` under `governor` (which may name a kernel version).
fn run_traced_at(json: &str, governor: &str, w: Programs, duration_s: f64) -> dvfslab_sim::observe::Timeline {
    let plat = Platform::from_json(json, "kvm").unwrap();
    let cfg = SimConfig {
        governor: governor.into(),
        duration_ns: Some((duration_s * 1e9) as u64),
        timeline: true,
        ..SimConfig::default()
    };
    Sim::with_workload(plat, &cfg, Box::new(w), "test".into()).unwrap().run().unwrap().timeline.unwrap()
}

/// A disk serving `queue_depth` requests at once, each completion's softirq where `completion`
/// says.
/// ext4's end-I/O worker of a run, if the simulator added one.
fn end_io_worker(tl: &dvfslab_sim::observe::Timeline) -> Option<u32> {
    tl.task_names.iter().position(|n| n.starts_with("kworker/u")).map(|i| i as u32)
}

/// The state each switch-out of `task` left it in.
fn switch_out_states(tl: &dvfslab_sim::observe::Timeline, task: i64) -> Vec<char> {
    (0..tl.switch_prev.len()).filter(|&i| tl.switch_prev[i] == task).map(|i| tl.switch_prev_state[i]).collect()
}

/// The wakings of `task`: (time ns, the task current on the waker's CPU, its context).
fn wakings_of(tl: &dvfslab_sim::observe::Timeline, task: u32) -> Vec<(u64, i64, WakeContext)> {
    (0..tl.waking_task.len())
        .filter(|&i| tl.waking_task[i] == task)
        .map(|i| (tl.waking_time_ns[i], tl.waking_waker[i], tl.waking_context[i]))
        .collect()
}

#[test]
fn a_vfork_parent_sleeps_uninterruptibly_until_its_child_completes_it() {
    // The parent forks and waits in D; the child works 100 µs (260k cycles at 2.6 GHz), posts
    // (its exec's complete_vfork_done) and works on; the parent then waits for it in S.
    let parent =
        vec![Op::Spawn { program: 0, count: 1 }, Op::WaitUninterruptible { ch: 0 }, Op::WaitChildren, Op::Exit];
    let work = Op::Run { cycles: Amount::Fixed(260_000.0), mem_frac: 0.0 };
    let child = vec![work.clone(), Op::Post { ch: 0, sync: false }, work, Op::Exit];
    let tl = run_traced(Programs { tasks: vec![parent], spawned: vec![child], devices: vec![] }, 0.01);
    // Task 0 is the parent, task 1 its child.
    assert_eq!(switch_out_states(&tl, 0), ['D', 'S', 'X']);
    let woken = wakings_of(&tl, 0);
    assert_eq!(woken.len(), 2, "{woken:?}");
    // The first wake-up is the child's post, from its own task context, 100 µs in.
    let (at, waker, context) = woken[0];
    assert_eq!((waker, context), (1, WakeContext::Task));
    assert!((100_000..120_000).contains(&at), "{at} ns");
}

#[test]
fn a_write_ended_by_ext4s_end_io_worker_wakes_its_submitter_from_the_worker_from_5_6() {
    // A task waits for its 1 ms write, whose end is ext4's end-I/O worker's:
    // the completion's softirq wakes the worker, which runs its conversion (8 µs at the
    // guest's 2.6 GHz) and then wakes the task, which slept in D throughout. The worker the
    // simulator adds is the same one that ends writebacks nobody waits for (below).
    use dvfslab_sim::workload::estimates::kthreads as est;
    let submitter = vec![Op::IoEndWork { dev: 0, service_ns: Amount::Fixed(1_000_000.0) }, count(0), Op::Exit];
    let disk = common::queued_disk(1, Completion::Submitter);
    let run = |kernel: &str| {
        let w = Programs { tasks: vec![submitter.clone()], spawned: vec![], devices: vec![disk.clone()] };
        run_traced_at(&common::quiet_preset("kvm-guest-2cpu"), &format!("performance:kernel={kernel}"), w, 0.01)
    };
    let tl = run("6.18");
    assert_eq!(switch_out_states(&tl, 0), ['D', 'X']);
    let worker = end_io_worker(&tl).expect("the end-I/O worker");
    let woken_worker = wakings_of(&tl, worker);
    assert_eq!(woken_worker.len(), 1, "{woken_worker:?}");
    let (worker_woken_at, _, worker_context) = woken_worker[0];
    assert_eq!(worker_context, WakeContext::Softirq);
    assert!((1_000_000..1_010_000).contains(&worker_woken_at), "{worker_woken_at} ns");
    let woken = wakings_of(&tl, 0);
    assert_eq!(woken.len(), 1, "{woken:?}");
    let (at, waker, context) = woken[0];
    assert_eq!((waker, context), (worker as i64, WakeContext::Task));
    let conversion_ns = est::END_IO_WORK_RUN_CYCLES / 2.6;
    assert!(at as f64 >= worker_woken_at as f64 + conversion_ns, "{at} ns, the worker woken at {worker_woken_at} ns");
    // Before 5.6 ext4's writeback allocates written extents (no `dioread_nolock` by default):
    // no worker exists, and the completion's softirq wakes the task itself, 1 ms in.
    let tl = run("5.5");
    assert_eq!(switch_out_states(&tl, 0), ['D', 'X']);
    assert_eq!(end_io_worker(&tl), None, "{:?}", tl.task_names);
    let woken = wakings_of(&tl, 0);
    assert_eq!(woken.len(), 1, "{woken:?}");
    assert_eq!(woken[0].2, WakeContext::Softirq);
    assert!((1_000_000..1_010_000).contains(&woken[0].0), "{} ns", woken[0].0);
}

#[test]
fn ext4s_end_io_worker_takes_its_conversions_in_completion_order_and_wakes_only_a_waiter() {
    // A task writes back (no waiter) and then waits for a write of its own; the disk serves
    // both at once, so the second completes while the worker runs the first's conversion
    // and is queued behind it. The worker wakes nobody after the writeback's conversion and
    // the task after its own, two conversions (16 µs) after the first completion.
    use dvfslab_sim::workload::estimates::kthreads as est;
    let service = Amount::Fixed(100_000.0);
    let writer = vec![
        Op::IoWriteback { dev: 0, service_ns: service },
        Op::IoEndWork { dev: 0, service_ns: service },
        count(0),
        Op::Exit,
    ];
    let w = Programs {
        tasks: vec![writer],
        spawned: vec![],
        devices: vec![common::queued_disk(2, Completion::Line { cpu: 1, coalesced: false })],
    };
    let tl = run_traced_at(&common::quiet_preset("kvm-guest-2cpu"), "performance:kernel=6.18", w, 0.01);
    let worker = end_io_worker(&tl).expect("the end-I/O worker");
    // Woken once, by the first completion; the second finds it awake.
    let woken_worker = wakings_of(&tl, worker);
    assert_eq!(woken_worker.len(), 1, "{woken_worker:?}");
    let first_completion = woken_worker[0].0;
    assert!((100_000..110_000).contains(&first_completion), "{first_completion} ns");
    let woken = wakings_of(&tl, 0);
    assert_eq!(woken.len(), 1, "{woken:?}");
    assert_eq!((woken[0].1, woken[0].2), (worker as i64, WakeContext::Task));
    // The worker runs once, from its wake-up to its sleep, both conversions back to back.
    let runs: Vec<(u64, u64)> = (0..tl.switch_next.len())
        .filter(|&i| tl.switch_next[i] == worker as i64 && tl.switch_time_ns[i] >= first_completion)
        .map(|i| {
            let out = (i..tl.switch_prev.len()).find(|&j| tl.switch_prev[j] == worker as i64).expect("a switch-out");
            (tl.switch_time_ns[i], tl.switch_time_ns[out])
        })
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let (start, end) = runs[0];
    let two_conversions = 2.0 * est::END_IO_WORK_RUN_CYCLES / 2.6;
    let after = (woken[0].0 - start) as f64;
    assert!((after - two_conversions).abs() < 1_000.0, "the task woken {after} ns into the worker's run");
    assert!(end >= woken[0].0, "{runs:?}");
}

#[test]
fn a_writeback_wakes_ext4s_end_io_worker_from_the_completion_softirq_from_5_6() {
    // A task pinned to CPU 0 writes data back (a 100 µs request it does not wait for) and
    // works on; the disk's interrupt is taken by CPU 1. From 5.6 (dioread_nolock ext4's
    // default), the completion's softirq on CPU 1 wakes ext4's end-I/O worker, which runs its
    // conversion and sleeps; before, nothing wakes and no worker exists.
    use dvfslab_sim::workload::estimates::kthreads as est;
    let service = 100_000.0;
    let writer = vec![
        Op::SetAffinity { cpus: Some(Rc::from(vec![0])) },
        Op::Run { cycles: Amount::Fixed(26_000.0), mem_frac: 0.0 },
        Op::IoWriteback { dev: 0, service_ns: Amount::Fixed(service) },
        Op::Run { cycles: Amount::Fixed(520_000.0), mem_frac: 0.0 },
        count(0),
        Op::Exit,
    ];
    let disk = common::queued_disk(1, Completion::Line { cpu: 1, coalesced: false });
    let run = |kernel: &str| {
        let w = Programs { tasks: vec![writer.clone()], spawned: vec![], devices: vec![disk.clone()] };
        run_traced_at(&common::quiet_preset("kvm-guest-2cpu"), &format!("performance:kernel={kernel}"), w, 0.01)
    };
    // The writer never sleeps on its request: it runs on to its exit.
    let never_waits = |tl: &dvfslab_sim::observe::Timeline| {
        let states = switch_out_states(tl, 0);
        assert!(!states.contains(&'D') && states.last() == Some(&'X'), "{states:?}");
    };
    let tl = run("6.18");
    never_waits(&tl);
    let worker = end_io_worker(&tl).expect("the end-I/O worker");
    let woken = wakings_of(&tl, worker);
    assert_eq!(woken.len(), 1, "{woken:?}");
    let i = (0..tl.waking_task.len()).find(|&i| tl.waking_task[i] == worker).unwrap();
    assert_eq!((tl.waking_context[i], tl.waking_cpu[i]), (WakeContext::Softirq, 1));
    // 10 µs of work, then the request's 100 µs.
    assert!((105_000..115_000).contains(&woken[0].0), "{} ns", woken[0].0);
    // The worker runs its conversion on the idle CPU 1 (2.6 GHz: the preset's base) and sleeps.
    // (Its first run, at the start, only goes to sleep.)
    let after = |i: &usize| tl.switch_time_ns[*i] >= woken[0].0;
    let ins: Vec<usize> =
        (0..tl.switch_next.len()).filter(|&i| tl.switch_next[i] == worker as i64).filter(after).collect();
    let outs: Vec<usize> =
        (0..tl.switch_prev.len()).filter(|&i| tl.switch_prev[i] == worker as i64).filter(after).collect();
    assert_eq!((ins.len(), outs.len()), (1, 1));
    assert_eq!(tl.switch_cpu[ins[0]], 1);
    assert_eq!(tl.switch_prev_state[outs[0]], 'S');
    let ran = (tl.switch_time_ns[outs[0]] - tl.switch_time_ns[ins[0]]) as f64;
    assert!((ran - est::END_IO_WORK_RUN_CYCLES / 2.6).abs() < 1_000.0, "{ran} ns");
    // Before 5.6 writeback allocates written extents: the softirq ends the I/O, no worker.
    let tl = run("5.5");
    never_waits(&tl);
    assert_eq!(end_io_worker(&tl), None, "{:?}", tl.task_names);
    assert!(tl.waking_task.iter().all(|&t| t == 0), "{:?}", tl.waking_task);
}

/// The CPUs whose softirqs woke the submitter of a 1 ms I/O, pinned to `cpu` on the 2-CPU
/// guest, of a device completing as `completion` says.
fn completion_cpus(cpu: usize, completion: Completion) -> Vec<u32> {
    let submitter = vec![
        Op::SetAffinity { cpus: Some(Rc::from(vec![cpu])) },
        Op::Io { dev: 0, service_ns: Amount::Fixed(1_000_000.0), transfer_ns: Amount::ZERO },
        count(0),
        Op::Jump { to: 1 },
    ];
    let disk = common::queued_disk(1, completion);
    let tl = run_traced(Programs { tasks: vec![submitter], spawned: vec![], devices: vec![disk] }, 0.01);
    let woken: Vec<usize> = (0..tl.waking_task.len())
        .filter(|&i| tl.waking_task[i] == 0 && tl.waking_context[i] == WakeContext::Softirq)
        .collect();
    assert!(woken.len() >= 5, "{} completions", woken.len());
    woken.iter().map(|&i| tl.waking_cpu[i]).collect()
}

#[test]
fn a_single_line_device_completes_on_the_cpu_it_declares_clamped_to_the_machine() {
    // The virtio disk's line is taken by vCPU 1: a submitter on CPU 0 is woken from there,
    // one on CPU 1 locally; a line declared beyond the machine's CPUs goes to its last one.
    assert!(completion_cpus(0, Completion::Line { cpu: 1, coalesced: false }).iter().all(|&c| c == 1));
    assert!(completion_cpus(1, Completion::Line { cpu: 1, coalesced: false }).iter().all(|&c| c == 1));
    assert!(completion_cpus(1, Completion::Line { cpu: 0, coalesced: false }).iter().all(|&c| c == 0));
    assert!(completion_cpus(0, Completion::Line { cpu: 7, coalesced: false }).iter().all(|&c| c == 1));
    assert!(completion_cpus(0, Completion::Submitter).iter().all(|&c| c == 0));
}

#[test]
fn the_platforms_background_wakes_every_cpu_at_its_rate() {
    // kvm-guest-2cpu declares its own background (its daemons and timer-driven kernel threads):
    // a kernel thread per CPU, waking `kthread_hz` times a second on average, each time for
    // `kthread_us`. A workload that sleeps throughout leaves only them: over 4 s, about
    // 2 × 4 × kthread_hz wake-ups, each followed by a run of kthread_us on an otherwise idle
    // 2.6 GHz CPU. The intervals are exponential (a Poisson process), as irregular as the
    // recordings' (coefficient of variation 1.4–1.5), not a jittered period.
    let plat = Platform::from_json(&common::preset("kvm-guest-2cpu"), "kvm").unwrap();
    let bg = plat.file.background.expect("a background");
    let sleeper = vec![Op::Sleep { ns: Amount::Fixed(10e9) }, Op::Exit];
    let tl = run_traced_on(
        &common::preset("kvm-guest-2cpu"),
        Programs { tasks: vec![sleeper], spawned: vec![], devices: vec![] },
        4.0,
    );
    let expected = 2.0 * 4.0 * bg.kthread_hz;
    let woken: Vec<u32> = tl.waking_task.iter().copied().filter(|&t| t != 0).collect();
    let n = woken.len() as f64;
    assert!((n - expected).abs() < 0.15 * expected, "{n} wake-ups, expected about {expected}");
    // Both CPUs' threads wake (tasks 1 and 2, after the workload's one).
    for t in [1, 2] {
        assert!(woken.iter().filter(|&&w| w == t).count() as f64 > 0.35 * expected, "task {t}");
    }
    // Their intervals: mean 1/kthread_hz, standard deviation as large as the mean (uniform
    // intervals in [0.5, 1.5] of the mean would give 0.29 of it).
    let mut intervals_ms = Vec::new();
    for t in [1, 2] {
        let times: Vec<f64> = tl
            .waking_task
            .iter()
            .zip(&tl.waking_time_ns)
            .filter(|&(&w, _)| w == t)
            .map(|(_, &ns)| ns as f64 / 1e6)
            .collect();
        intervals_ms.extend(times.windows(2).map(|w| w[1] - w[0]));
    }
    let n = intervals_ms.len() as f64;
    let mean = intervals_ms.iter().sum::<f64>() / n;
    let sd = (intervals_ms.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
    assert!((mean * bg.kthread_hz / 1e3 - 1.0).abs() < 0.2, "mean interval {mean} ms");
    assert!((0.75..1.25).contains(&(sd / mean)), "coefficient of variation {}", sd / mean);
    // Each run lasts kthread_us: the switch-ins of the kernel threads to their switch-outs.
    let mut runs = Vec::new();
    let mut started: Option<u64> = None;
    for i in 0..tl.switch_prev.len() {
        if tl.switch_next[i] == 1 {
            started = Some(tl.switch_time_ns[i]);
        } else if tl.switch_prev[i] == 1 {
            runs.push(tl.switch_time_ns[i] - started.take().expect("switched in first"));
        }
    }
    let mean_us = runs.iter().sum::<u64>() as f64 / runs.len() as f64 / 1e3;
    assert!((mean_us / bg.kthread_us - 1.0).abs() < 0.05, "{mean_us} µs");
}

#[test]
fn a_plugged_request_is_dispatched_by_its_cpus_kblockd_worker_before_the_device_starts() {
    // A task works 10 µs, plugs a 42 µs request and sleeps on it in D: the sleep wakes its
    // CPU's kblockd worker from the task's own context, the worker runs first, for the
    // dispatch the request carries (a small request's 23 µs at 2.6 GHz, a large discard's
    // 69 µs: `estimates::kthreads`), and only then hands the request to the device, so the
    // task sleeps the worker's run plus the device's time.
    use dvfslab_sim::workload::estimates::kthreads as est;
    let service = 42_000.0;
    let disk = common::queued_disk(1, Completion::Submitter);
    // It starts after a millisecond's sleep, when the workers wait for work.
    let submitter = |op: Op| {
        let work = Op::Run { cycles: Amount::Fixed(26_000.0), mem_frac: 0.0 };
        vec![Op::Sleep { ns: Amount::Fixed(1e6) }, work, op, count(0), Op::Exit]
    };
    for dispatch_cycles in [est::KBLOCKD_RUN_CYCLES, est::KBLOCKD_LARGE_DISCARD_RUN_CYCLES] {
        let plugged = submitter(Op::IoPlugged { dev: 0, service_ns: Amount::Fixed(service), dispatch_cycles });
        let tl = run_traced(Programs { tasks: vec![plugged], spawned: vec![], devices: vec![disk.clone()] }, 0.01);
        assert_eq!(switch_out_states(&tl, 0), ['S', 'D', 'X']);
        // The workers are the tasks after the workload's, one per CPU in CPU order.
        let slept =
            (0..tl.switch_prev.len()).find(|&i| tl.switch_prev[i] == 0 && tl.switch_prev_state[i] == 'D').unwrap();
        let cpu = tl.switch_cpu[slept] as usize;
        let worker = 1 + cpu as u32;
        assert_eq!(tl.switch_next[slept], worker as i64, "the worker runs as the task sleeps");
        // Woken once, from task context as the task leaves the CPU, which the worker then takes.
        let woken = wakings_of(&tl, worker);
        assert_eq!(woken.len(), 1, "{woken:?}");
        assert_eq!((woken[0].0, woken[0].2), (tl.switch_time_ns[slept], WakeContext::Task));
        // The other CPU's worker never wakes: nothing was plugged there.
        assert!(wakings_of(&tl, 1 + (1 - cpu) as u32).is_empty());
        // The worker's run is the request's dispatch (2.6 GHz: the preset's base).
        let out = (slept + 1..tl.switch_prev.len()).find(|&i| tl.switch_prev[i] == worker as i64).unwrap();
        let run_ns = dispatch_cycles / 2.6;
        let ran = (tl.switch_time_ns[out] - tl.switch_time_ns[slept]) as f64;
        assert!((ran - run_ns).abs() < 3_000.0, "{ran} ns of run");
        let (done, _, _) = wakings_of(&tl, 0)[1];
        let d_sleep = (done - tl.switch_time_ns[slept]) as f64;
        assert!((d_sleep - (run_ns + service)).abs() < 3_000.0, "{d_sleep} ns in D");
    }
    // Submitted without a plug, the request starts at once: the sleep is the device's alone,
    // and no worker exists.
    let direct = submitter(Op::Io { dev: 0, service_ns: Amount::Fixed(service), transfer_ns: Amount::ZERO });
    let tl = run_traced(Programs { tasks: vec![direct], spawned: vec![], devices: vec![disk] }, 0.01);
    let slept = (0..tl.switch_prev.len()).find(|&i| tl.switch_prev[i] == 0 && tl.switch_prev_state[i] == 'D').unwrap();
    let d_sleep = (wakings_of(&tl, 0)[1].0 - tl.switch_time_ns[slept]) as f64;
    assert!((d_sleep - service).abs() < 3_000.0, "{d_sleep} ns in D");
    assert!(tl.waking_task.iter().all(|&t| t == 0));
}

#[test]
fn a_cache_flush_goes_out_by_its_cpus_kblockd_worker_and_one_asked_during_a_commit_joins_the_next() {
    // Two tasks on their own CPUs flush a group-commit device (PostgreSQL's WAL): the first,
    // to an idle device, is dispatched by its CPU's kblockd worker before the commit starts
    // (blk_insert_flush's requeue list, kicked to kblockd); the second asks 100 µs later, while
    // that commit is on the device, wakes no worker and is carried by the next commit.
    use dvfslab_sim::workload::estimates::kthreads as est;
    let service = 500_000.0;
    let flusher = |delay_ns: f64| {
        let flush =
            Op::IoFlush { dev: 0, service_ns: Amount::Fixed(service), dispatch_cycles: est::KBLOCKD_RUN_CYCLES };
        vec![Op::Sleep { ns: Amount::Fixed(1e6 + delay_ns) }, flush, count(0), Op::Exit]
    };
    let wal = DeviceSpec {
        name: "wal".into(),
        queue_depth: 1,
        service: Service::GroupCommit { leader_iowait: true },
        completion: Completion::Submitter,
    };
    let mut first = flusher(0.0);
    let mut second = flusher(100_000.0);
    first.insert(0, Op::SetAffinity { cpus: Some(std::rc::Rc::from([0usize])) });
    second.insert(0, Op::SetAffinity { cpus: Some(std::rc::Rc::from([1usize])) });
    let tl = run_traced(Programs { tasks: vec![first, second], spawned: vec![], devices: vec![wal] }, 0.01);
    // The workers are the tasks after the workload's two, one per CPU in CPU order.
    let (worker0, worker1) = (2, 3);
    let woken = wakings_of(&tl, worker0);
    assert_eq!(woken.len(), 1, "{woken:?}");
    assert!(wakings_of(&tl, worker1).is_empty(), "a flush that joins a commit dispatches nothing");
    // The first sleeps the worker's run and the device's time; the second until the commit
    // after the first, which starts when the first ends.
    let run_ns = est::KBLOCKD_RUN_CYCLES / 2.6;
    let slept = |task: i64| {
        let i = (0..tl.switch_prev.len()).find(|&i| tl.switch_prev[i] == task && tl.switch_prev_state[i] == 'D');
        tl.switch_time_ns[i.expect("it slept in D")]
    };
    // Each is woken at its start, after its sleep, and at its flush's end.
    let done = |task: u32| wakings_of(&tl, task)[2].0;
    let first_d = (done(0) - slept(0)) as f64;
    assert!((first_d - (run_ns + service)).abs() < 3_000.0, "{first_d} ns in D");
    let second_done = (done(1) - slept(0)) as f64;
    assert!((second_done - (run_ns + 2.0 * service)).abs() < 3_000.0, "{second_done} ns");
}

#[test]
fn exits_drive_rcu_grace_periods_whose_kthread_takes_turns_on_busy_cpus() {
    // A shell forks 100 µs children one after another while a hog keeps the other CPU busy.
    // Every exit queues an RCU callback: busy CPUs' ticks start grace periods and report their
    // quiescent states, and each end (starting the next) wakes the grace-period kthread (task
    // 3, after the workload's two and the first child, whose exit brought it in) from a softirq
    // or its timeout.
    let shell = vec![Op::Spawn { program: 0, count: 1 }, Op::WaitChildren, Op::Jump { to: 0 }];
    let child = vec![Op::Run { cycles: Amount::Fixed(260_000.0), mem_frac: 0.0 }, Op::Exit];
    let hog = vec![Op::Run { cycles: Amount::Fixed(1e12), mem_frac: 0.0 }, Op::Jump { to: 0 }];
    let seconds = 0.4;
    let tl = run_traced(Programs { tasks: vec![shell, hog.clone()], spawned: vec![child], devices: vec![] }, seconds);
    let kthread = 3;
    let woken = wakings_of(&tl, kthread);
    // Back-to-back grace periods of two jiffies (8 ms at HZ=250: a busy CPU reports its
    // quiescent state at the tick after the one where it noticed the grace period), one
    // wake-up each: the force-quiescent-state timeout of a jiffy, rounded up by the timer
    // wheel, fires at the same tick as the last report.
    let rate = woken.len() as f64 / seconds;
    assert!((110.0..=130.0).contains(&rate), "{rate} wake-ups a second");
    let gaps: Vec<u64> = woken.windows(2).map(|w| w[1].0 - w[0].0).collect();
    let two_ticks = gaps.iter().filter(|&&g| g.abs_diff(8_000_000) < 200_000).count();
    assert!(two_ticks as f64 > 0.9 * gaps.len() as f64, "{two_ticks} of {} gaps two ticks", gaps.len());
    assert!(woken.iter().all(|w| matches!(w.2, WakeContext::Softirq | WakeContext::Hardirq)), "{woken:?}");
    // Both CPUs are busy: the kthread finds no idle CPU and takes its turn after a task there.
    let from_tasks =
        (0..tl.switch_prev.len()).filter(|&i| tl.switch_next[i] == kthread as i64 && tl.switch_prev[i] >= 0).count();
    assert!(from_tasks as f64 > 0.9 * woken.len() as f64, "{from_tasks} of {} runs after a task", woken.len());
    // Without exits nothing queues a callback, and a workload that never forks has no kthread:
    // the hog alone runs.
    let tl = run_traced(Programs { tasks: vec![hog], spawned: vec![], devices: vec![] }, 0.1);
    assert!(tl.switch_next.iter().all(|&t| t <= 0), "only the hog and idle");
}

#[test]
fn an_exit_takes_two_grace_periods_and_an_exec_one() {
    // One child runs 100 µs and exits (or execs, then exits) while a hog keeps the other CPU
    // busy; the shell then sleeps. The exit's task is freed after a grace period, and freeing
    // it queues its credentials for the next (`exit_creds`); an exec queues its old
    // credentials (`commit_creds`). The kthread (task 3) runs to start each grace period and
    // to end it two ticks later.
    let hog = vec![Op::Run { cycles: Amount::Fixed(1e12), mem_frac: 0.0 }, Op::Jump { to: 0 }];
    let shell =
        vec![Op::Spawn { program: 0, count: 1 }, Op::WaitChildren, Op::Sleep { ns: Amount::Fixed(1e9) }, Op::Exit];
    let kthread_runs = |child: Vec<Op>| {
        let w = Programs { tasks: vec![shell.clone(), hog.clone()], spawned: vec![child], devices: vec![] };
        let tl = run_traced(w, 0.2);
        assert_eq!(tl.task_names[3], "rcu_preempt");
        // Its switch-ins after the one at its spawn, which finds nothing to do.
        (0..tl.switch_next.len())
            .filter(|&i| tl.switch_next[i] == 3 && tl.switch_time_ns[i] > 1_000_000)
            .map(|i| tl.switch_time_ns[i])
            .collect::<Vec<u64>>()
    };
    let work = Op::Run { cycles: Amount::Fixed(260_000.0), mem_frac: 0.0 };
    let exit_only = kthread_runs(vec![work.clone(), Op::Exit]);
    assert_eq!(exit_only.len(), 4, "{exit_only:?}");
    for start_end in exit_only.chunks(2) {
        let gp_ns = start_end[1] - start_end[0];
        assert!(gp_ns.abs_diff(8_000_000) < 100_000, "{exit_only:?}");
    }
    // The exec's callback is queued 100 µs before the exit's and shares its first grace
    // period: the same two grace periods.
    let exec_then_exit = kthread_runs(vec![work.clone(), Op::Exec { comm: "child" }, work.clone(), Op::Exit]);
    assert_eq!(exec_then_exit.len(), 4, "{exec_then_exit:?}");
    // An exec alone, its task running on: one grace period.
    let long = Op::Run { cycles: Amount::Fixed(1e12), mem_frac: 0.0 };
    let exec_only = kthread_runs(vec![work, Op::Exec { comm: "child" }, long, Op::Exit]);
    assert_eq!(exec_only.len(), 2, "{exec_only:?}");
}

#[test]
fn from_6_18_33_a_forked_child_waits_for_its_parent_instead_of_preempting_it() {
    // A parent pinned to CPU 0 forks a child (which inherits the pin) half-way through each
    // millisecond of work, then waits for it. The child is placed with half a slice to its
    // first deadline, earlier than the parent's: mainline 6.18's wake-up check lets it preempt
    // the parent at the fork; the reworked check of the 6.18 stable series (6.18.33) returns
    // first for WF_FORK, so the parent finishes its work and the child runs when it waits, as
    // it does under the recordings' kernel (6.18.44; scripts/probes/fork-preempt.c).
    let work = |us: f64| Op::Run { cycles: Amount::Fixed(us * 2_600.0), mem_frac: 0.0 };
    let parent = vec![
        Op::SetAffinity { cpus: Some(Rc::from(vec![0])) },
        work(500.0),
        Op::Spawn { program: 0, count: 1 },
        work(500.0),
        Op::WaitChildren,
        Op::Jump { to: 1 },
    ];
    let child = vec![work(100.0), Op::Exit];
    let preempted = |kernel: &str| {
        let w = Programs { tasks: vec![parent.clone()], spawned: vec![child.clone()], devices: vec![] };
        let tl =
            run_traced_at(&common::quiet_preset("kvm-guest-2cpu"), &format!("performance:kernel={kernel}"), w, 0.1);
        // The parent's switch-outs while runnable at the instant of one of its forks (others
        // are the tick's).
        let forks: Vec<u64> = (0..tl.process_kind.len())
            .filter(|&i| tl.process_kind[i] == 'F' && tl.process_task[i] == 0)
            .map(|i| tl.process_time_ns[i])
            .collect();
        assert!(forks.len() > 50, "{} forks", forks.len());
        (0..tl.switch_prev.len())
            .filter(|&i| tl.switch_prev[i] == 0 && tl.switch_prev_state[i] == 'R')
            .filter(|&i| forks.contains(&tl.switch_time_ns[i]))
            .count()
    };
    let (mainline, stable) = (preempted("6.18"), preempted("6.18.44"));
    assert!(mainline > 10, "6.18: the parent preempted {mainline} times");
    assert_eq!(stable, 0, "6.18.44: the parent preempted {stable} times");
}

/// `writers_and_a_reader` over one pipe, 100-byte messages, at `kernel`.
fn pipe_run(kernel: &str) -> (f64, usize, usize) {
    let write = Op::PipeWrite { pipe: 0, bytes: 100, crossing: CrossingCycles::default() };
    let read = Op::PipeRead { pipe: 0, crossing: CrossingCycles::default() };
    writers_and_a_reader(kernel, write, read)
}

/// Three writers on CPU 0 send 2,000 messages each through `write`, a reader on CPU 1 takes
/// them by `read`, ten times slower; (messages read, the writers' sleeps, the reader's).
fn writers_and_a_reader(kernel: &str, write: Op, read: Op) -> (f64, usize, usize) {
    let plat = Platform::from_json(&common::quiet_preset("kvm-guest-2cpu"), "kvm").unwrap();
    let cfg = SimConfig {
        governor: format!("performance:kernel={kernel}"),
        duration_ns: Some(200_000_000),
        timeline: true,
        ..SimConfig::default()
    };
    let run_us = |us: f64| Op::Run { cycles: Amount::Fixed(us * 2.6e3), mem_frac: 0.0 };
    let writer = vec![run_us(1.0), write, Op::Repeat { to: 0, times: 2000 }, Op::Exit];
    let reader = vec![read, run_us(10.0), count(0), Op::Repeat { to: 0, times: 6000 }, Op::Exit];
    let tasks = vec![(writer.clone(), 0), (writer.clone(), 0), (writer, 0), (reader, 1)];
    let r =
        Sim::with_workload(plat, &cfg, Box::new(common::PinnedPrograms(tasks)), "test".into()).unwrap().run().unwrap();
    let tl = r.timeline.as_ref().unwrap();
    let sleeps = |tasks: std::ops::Range<i64>| {
        tl.switch_prev.iter().zip(&tl.switch_prev_state).filter(|&(p, &s)| tasks.contains(p) && s == 'S').count()
    };
    (r.summary.metric.value, sleeps(0..3), sleeps(3..4))
}

#[test]
fn a_pipe_delivers_every_message_and_wakes_its_writers_as_the_kernel_does() {
    // 6,000 messages fill the 640 the pipe holds, then the writers wait on the reader: from
    // 6.14 one writer is woken per page the reader empties of a full pipe (40 messages), and
    // it fills that page again itself (no other writer runs): about 6,000 / 40 sleeps.
    let (read, writer_sleeps, reader_sleeps) = pipe_run("6.18");
    assert_eq!(read, 6000.0);
    assert!((120..=150).contains(&writer_sleeps), "{writer_sleeps}");
    // The reader never finds the pipe empty until the writers are done.
    assert!(reader_sleeps <= 2, "{reader_sleeps}");
    // 5.6 to 6.13: every read of a full pipe wakes a writer, which finds it still full and
    // sleeps again until the page is emptied: most of the 40 reads of each page wake one.
    let (read, writer_sleeps_6_1, _) = pipe_run("6.1");
    assert_eq!(read, 6000.0);
    assert!(writer_sleeps_6_1 > 20 * writer_sleeps, "{writer_sleeps_6_1} against {writer_sleeps}");
    // Before 5.6 a freed page wakes every writer at once; two of the three find it full again.
    let (read, writer_sleeps_5_4, _) = pipe_run("5.4");
    assert_eq!(read, 6000.0);
    assert!(writer_sleeps_5_4 > 2 * writer_sleeps && writer_sleeps_5_4 < 4 * writer_sleeps, "{writer_sleeps_5_4}");
}

#[test]
fn a_unix_socket_delivers_every_message_and_wakes_its_senders_at_a_quarter() {
    // 100-byte messages charge 768 bytes each: the socket takes 278, and its blocked senders
    // all wake once 209 have been read (69 left, a quarter of the 212,992-byte sndbuf); the
    // three refill it and block again: three sleeps per 209 messages of the 6,000 less the
    // 278 it holds, at most 82, fewer once senders have sent their last.
    let send = Op::UnixSend { sock: 0, truesize: 768, crossing: CrossingCycles::default() };
    let recv = Op::UnixRecv { sock: 0, truesize: 768, crossing: CrossingCycles::default() };
    let (read, sender_sleeps, reader_sleeps) = writers_and_a_reader("6.18", send, recv);
    assert_eq!(read, 6000.0);
    assert!((60..=82).contains(&sender_sleeps), "{sender_sleeps}");
    assert!(reader_sleeps <= 2, "{reader_sleeps}");
}

/// A sender of 2,000 messages on CPU 0 and their reader on `reader_cpu`, each working 1 µs a
/// message (2,600 cycles on the guest): the read count and the work the run submitted.
fn one_sender_one_reader(reader_cpu: usize, send: CrossingCycles, recv: CrossingCycles) -> (f64, f64) {
    let plat = Platform::from_json(&common::quiet_preset("kvm-guest-2cpu"), "kvm").unwrap();
    let cfg = SimConfig {
        governor: "performance:kernel=6.18".into(),
        duration_ns: Some(200_000_000),
        ..SimConfig::default()
    };
    let work = Op::Run { cycles: Amount::Fixed(2_600.0), mem_frac: 0.0 };
    let sender = vec![
        work.clone(),
        Op::UnixSend { sock: 0, truesize: 768, crossing: send },
        Op::Repeat { to: 0, times: 2000 },
        Op::Exit,
    ];
    let reader = vec![
        Op::UnixRecv { sock: 0, truesize: 768, crossing: recv },
        work,
        count(0),
        Op::Repeat { to: 0, times: 2000 },
        Op::Exit,
    ];
    let tasks = vec![(sender, 0), (reader, reader_cpu)];
    let r =
        Sim::with_workload(plat, &cfg, Box::new(common::PinnedPrograms(tasks)), "test".into()).unwrap().run().unwrap();
    (r.summary.metric.value, r.summary.work_submitted_cycles)
}

#[test]
fn a_message_costs_its_cache_lines_crossing_only_between_cpus() {
    let base = 2.0 * 2000.0 * 2_600.0;
    let none = CrossingCycles::default();
    let message = CrossingCycles { message: 1_000, shared: 0 };
    // On one CPU nothing crosses, whatever the costs.
    let both = CrossingCycles { message: 1_000, shared: 500 };
    assert_eq!(one_sender_one_reader(0, both, both), (2000.0, base));
    // Every message written on CPU 0 and read on CPU 1 costs its reader the crossing, with the
    // reader's next work.
    assert_eq!(one_sender_one_reader(1, none, message), (2000.0, base + 2000.0 * 1_000.0));
    // The sender pays for each write after the reader has read on the other CPU: most, not the
    // first (nothing read yet) nor the last (no work after it to charge it with).
    let (read, work) = one_sender_one_reader(1, message, none);
    let sender_crossings = (work - base) / 1_000.0;
    assert_eq!(read, 2000.0);
    assert!(sender_crossings.fract() == 0.0 && (1000.0..2000.0).contains(&sender_crossings), "{sender_crossings}");
    // The shared lines move whenever the socket's last use was on the other CPU: at most at
    // every operation, and at least once a turn of the two.
    let shared = CrossingCycles { message: 0, shared: 500 };
    let (_, work) = one_sender_one_reader(1, shared, shared);
    let moves = (work - base) / 500.0;
    assert!((1.0..=4000.0).contains(&moves), "{moves}");
}

/// When each of two tasks was woken by the disk's softirq: one, pinned to CPU 0, waits for a
/// 100 µs request after 10 µs of work, the other, on CPU 1, for a 40 µs one after 40 µs (a
/// 2-slot disk completing as `completion` says).
fn overlapping_request_wakeups(completion: Completion) -> [u64; 2] {
    let waiter = |pin: usize, delay_cycles: f64, service_ns: f64| {
        vec![
            Op::SetAffinity { cpus: Some(Rc::from(vec![pin])) },
            Op::Run { cycles: Amount::Fixed(delay_cycles), mem_frac: 0.0 },
            Op::Io { dev: 0, service_ns: Amount::Fixed(service_ns), transfer_ns: Amount::ZERO },
            count(0),
            Op::Exit,
        ]
    };
    // 2.6 GHz: 26,000 cycles are 10 µs, 104,000 are 40 µs.
    let first = waiter(0, 26_000.0, 100_000.0);
    let second = waiter(1, 104_000.0, 40_000.0);
    let disk = common::queued_disk(2, completion);
    let w = Programs { tasks: vec![first, second], spawned: vec![], devices: vec![disk] };
    let tl = run_traced_at(&common::quiet_preset("kvm-guest-2cpu"), "performance:kernel=6.18", w, 0.01);
    [0, 1].map(|task| {
        let woken: Vec<u64> =
            wakings_of(&tl, task).into_iter().filter(|w| w.2 == WakeContext::Softirq).map(|w| w.0).collect();
        assert_eq!(woken.len(), 1, "task {task}: {woken:?}");
        woken[0]
    })
}

#[test]
fn a_coalescing_disk_ends_a_request_with_the_last_one_in_service() {
    // Without coalescing each request ends on its own: the second, submitted after the first
    // and 60 µs shorter, before the first. A coalescing disk raises its interrupt once nothing
    // is left in service, so the second's completion waits for the first's and both are woken
    // by the same softirq, in the order they completed.
    let [first, second] = overlapping_request_wakeups(Completion::Line { cpu: 1, coalesced: false });
    assert!((105_000..115_000).contains(&first) && first > second + 5_000, "{first} {second} ns");
    let [first, second] = overlapping_request_wakeups(Completion::Line { cpu: 1, coalesced: true });
    assert!((105_000..115_000).contains(&first), "{first} ns");
    assert!(second <= first && first - second < 2_000, "{first} {second} ns");
}
