//! A guest kernel's vCPU packing (the platform's `vcpu_pack`, `sim/vcpu_pack.rs`): before the
//! kernel's own placement, a task goes to a vCPU already running something that has room for it.
//! Shown on the KVM guest by a request/response pair free to run anywhere (light enough to share
//! a vCPU, or too heavy to), a light periodic task pinned to each vCPU that now and then holds
//! the vCPU a woken side last ran on, a reader whose disk interrupts the other vCPU, and a shell
//! loop's forks.

use std::rc::Rc;

use crate::common;

use dvfslab_sim::hw::platform::{Platform, VcpuPack};
use dvfslab_sim::sched::task::{Amount, Op};
use dvfslab_sim::workload::{Better, Completion, DeviceSpec, Metric, RunStats, TaskSpec, Workload};
use dvfslab_sim::{Sim, SimConfig, SimResult};

/// 10 µs at the guest's 2.6 GHz.
const BURST_CYCLES: f64 = 26_000.0;
/// The default packing of the guest's kernel: every placement, up to 70% of a vCPU.
const PACK_ALL: u32 = 15;
const RUN_NS: u64 = 300_000_000;
const SETTLED_NS: u64 = 100_000_000;

/// A client and a server that take turns (each works `burst_cycles`, wakes the other
/// synchronously and blocks; the client then naps `nap_ns`), free to run on either vCPU, and,
/// with `disturbers`, on each vCPU a pinned task that works 100 µs every 2 ms (5% of it), the
/// second half a period later.
struct PairAndDisturbers {
    burst_cycles: f64,
    nap_ns: f64,
    disturbers: bool,
}

impl Workload for PairAndDisturbers {
    fn tasks(&self, _: &Platform) -> Vec<TaskSpec> {
        let (mut client, server) = common::request_response(self.burst_cycles);
        if self.nap_ns > 0.0 {
            client.insert(0, Op::Sleep { ns: Amount::Fixed(self.nap_ns) });
        }
        let disturber = || -> Rc<[Op]> {
            vec![
                Op::Sleep { ns: Amount::Fixed(1_900_000.0) },
                Op::Run { cycles: Amount::Fixed(10.0 * BURST_CYCLES), mem_frac: 0.0 },
                Op::Jump { to: 0 },
            ]
            .into()
        };
        let mut tasks = vec![TaskSpec::new("client", client.into()), TaskSpec::new("server", server.into())];
        if self.disturbers {
            tasks.push(TaskSpec::new("disturber/0", disturber()).pinned(vec![0]).start_at(500_000));
            tasks.push(TaskSpec::new("disturber/1", disturber()).pinned(vec![1]).start_at(1_500_000));
        }
        tasks
    }
    fn default_duration_ns(&self) -> u64 {
        RUN_NS
    }
    fn metric(&self, stats: &RunStats) -> Metric {
        let value = stats.counters.first().copied().unwrap_or(0) as f64;
        Metric { name: "round trips".into(), value, unit: "ops".into(), better: Better::Higher }
    }
}

/// The quiet guest (no background, no switching costs) packing the placements `flags` by the
/// read rule (None: mainline's placement).
fn guest(flags: Option<u32>) -> Platform {
    let pack = flags.map(|flags| serde_json::json!({"flags": flags, "util_limit_pct": 70.0}));
    common::quiet_guest(&[("vcpu_pack", pack)])
}

/// The quiet guest with the packing inferred from recordings, `vcpu_pack` as given.
fn inferred_guest(vcpu_pack: serde_json::Value) -> Platform {
    common::quiet_guest(&[("vcpu_pack", Some(vcpu_pack))])
}

fn run(plat: Platform, pair: PairAndDisturbers) -> SimResult {
    let cfg = SimConfig {
        governor: "performance:kernel=6.18".into(),
        duration_ns: Some(RUN_NS),
        timeline: true,
        ..SimConfig::default()
    };
    Sim::with_workload(plat, &cfg, Box::new(pair), "test".into()).unwrap().run().unwrap()
}

/// Switches into the client (task 0) and the server (task 1) on each vCPU after the first
/// 100 ms (new tasks start at half the capacity's utilisation, which takes that long to
/// settle to the ~30% each side runs), and how many of them find the other side last switched
/// in on the same vCPU (the pair sharing one).
fn placement(r: &SimResult) -> ([[u32; 2]; 2], u32) {
    let tl = r.timeline.as_ref().unwrap();
    let mut runs = [[0u32; 2]; 2];
    let mut last_cpu = [None::<u32>; 2];
    let mut together = 0;
    for ((&t, &cpu), &next) in tl.switch_time_ns.iter().zip(&tl.switch_cpu).zip(&tl.switch_next) {
        if let Ok(task @ 0..=1) = usize::try_from(next) {
            if t < SETTLED_NS {
                last_cpu[task] = Some(cpu);
                continue;
            }
            runs[task][cpu as usize] += 1;
            last_cpu[task] = Some(cpu);
            together += u32::from(last_cpu[1 - task] == Some(cpu));
        }
    }
    (runs, together)
}

fn pair(burst_us: f64, disturbers: bool) -> PairAndDisturbers {
    PairAndDisturbers { burst_cycles: burst_us * BURST_CYCLES / 10.0, nap_ns: 0.0, disturbers }
}

#[test]
fn a_light_pair_shares_its_wakers_vcpu() {
    // Each side works 2 µs a turn and the client naps 100 µs, as the probe on the guest did (it
    // shared a vCPU in 100% of its turns): a synchronous wake-up finds the waker's vCPU with
    // room for both. Mainline keeps each on its idle previous vCPU.
    let light = PairAndDisturbers { burst_cycles: 0.2 * BURST_CYCLES, nap_ns: 100_000.0, disturbers: false };
    let (runs, together) = placement(&run(guest(Some(PACK_ALL)), light));
    let all: u32 = runs.iter().flatten().sum();
    assert!(together * 10 > all * 9, "the pair shared a vCPU in {together} of {all} runs: {runs:?}");
    let light = PairAndDisturbers { burst_cycles: 0.2 * BURST_CYCLES, nap_ns: 100_000.0, disturbers: false };
    let (runs, together) = placement(&run(guest(None), light));
    assert_eq!(together, 0, "mainline: {runs:?}");
}

#[test]
fn a_pair_above_the_limit_keeps_a_vcpu_each() {
    // Each side working 40 µs a turn keeps its vCPU over 35% busy: the two together leave no
    // room under 70% on either, and placement is mainline's, which keeps them apart.
    let heavy = run(guest(Some(PACK_ALL)), pair(40.0, false));
    let (runs, together) = placement(&heavy);
    assert!(together * 20 < runs.iter().flatten().sum::<u32>(), "the pair shared a vCPU: {runs:?}");
    let mainline = run(guest(None), pair(40.0, false));
    assert_eq!(heavy.summary.metric.value, mainline.summary.metric.value);
}

#[test]
fn a_woken_task_stays_on_its_busy_previous_vcpu_while_it_has_room() {
    // Packing any wake-up (bit 4) without the synchronous rule, a heavy pair, and the
    // disturbers: a side woken while the disturber holds its vCPU stays there (the vCPU has
    // room), where mainline takes it to its waker's vCPU (wake_affine_idle: a synchronous waker
    // alone on its CPU) and the pair then shares one.
    let (runs, together) = placement(&run(guest(Some(4)), pair(40.0, true)));
    assert!(together < 20, "the pair shared a vCPU {together} times: {runs:?}");
    let (runs, together) = placement(&run(guest(None), pair(40.0, true)));
    assert!(together > 100, "the pair never shared a vCPU without packing: {runs:?}");
}

#[test]
fn no_packed_placement_is_mainlines_placement() {
    // flags 0: the sysctl off, placement is the kernel's own, run for run.
    let none = run(guest(None), pair(10.0, true)).summary;
    let off = run(guest(Some(0)), pair(10.0, true)).summary;
    assert_eq!(none.metric.value, off.metric.value);
    assert_eq!(none.per_cpu[0].busy_pct, off.per_cpu[0].busy_pct);
}

#[test]
fn the_inferred_rule_keeps_a_woken_task_on_its_previous_vcpu_while_it_has_room() {
    // A pair of 5 µs sides and the disturbers: each side's share of its vCPU (its IPIs' resume
    // included), counted twice as the rule does, and the disturber's 5% stay under 85%, so
    // every wake-up stays where the woken side last ran, idle or busy.
    let packed = run(inferred_guest(serde_json::json!({"margin_pct": 15.0})), pair(5.0, true));
    let (runs, together) = placement(&packed);
    assert_eq!(together, 0, "the pair shared a vCPU: {runs:?}");
    for (task, per_cpu) in runs.iter().enumerate() {
        assert!(per_cpu.iter().filter(|&&n| n > 0).count() == 1, "task {task} ran on both vCPUs: {runs:?}");
    }
    // At a 100% margin no vCPU ever has room: placement is the kernel's own, run for run.
    let none = run(guest(None), pair(5.0, true)).summary;
    let full = run(inferred_guest(serde_json::json!({"margin_pct": 100.0})), pair(5.0, true)).summary;
    assert_eq!(none.metric.value, full.metric.value);
}

/// A task that works 10 µs and waits for a read of `service_ns` on a disk whose one
/// interrupt line vCPU 1 takes (the guest's virtio disk), over and over; it starts on vCPU 0.
struct Reader {
    service_ns: f64,
}

impl Workload for Reader {
    fn tasks(&self, _: &Platform) -> Vec<TaskSpec> {
        let program: Rc<[Op]> = vec![
            Op::SetAffinity { cpus: Some(Rc::from(vec![0])) },
            Op::Run { cycles: Amount::Fixed(BURST_CYCLES), mem_frac: 0.0 },
            Op::SetAffinity { cpus: None },
            Op::Io { dev: 0, service_ns: Amount::Fixed(self.service_ns), transfer_ns: Amount::ZERO },
            Op::Run { cycles: Amount::Fixed(BURST_CYCLES), mem_frac: 0.0 },
            Op::Jump { to: 3 },
        ]
        .into();
        vec![TaskSpec::new("reader", program)]
    }
    fn devices(&self) -> Vec<DeviceSpec> {
        vec![common::queued_disk(1, Completion::Line { cpu: 1, coalesced: false })]
    }
    fn default_duration_ns(&self) -> u64 {
        20_000_000
    }
    fn metric(&self, _: &RunStats) -> Metric {
        Metric { name: "none".into(), value: 0.0, unit: "".into(), better: Better::Higher }
    }
}

/// The reader's switch-ins on each vCPU after its first read.
fn reader_runs(plat: Platform, service_ns: f64) -> [u32; 2] {
    let cfg = SimConfig {
        governor: "performance:kernel=6.18".into(),
        duration_ns: Some(20_000_000),
        timeline: true,
        ..SimConfig::default()
    };
    let r = Sim::with_workload(plat, &cfg, Box::new(Reader { service_ns }), "test".into()).unwrap().run().unwrap();
    let tl = r.timeline.as_ref().unwrap();
    let mut runs = [0u32; 2];
    for ((&t, &cpu), &next) in tl.switch_time_ns.iter().zip(&tl.switch_cpu).zip(&tl.switch_next) {
        if next == 0 && t > 1_000_000 {
            runs[cpu as usize] += 1;
        }
    }
    runs
}

#[test]
fn an_interrupt_on_an_idle_vcpu_takes_the_task_it_wakes() {
    // The read's completion wakes the reader from vCPU 1's interrupt while vCPU 1 idles: with
    // bit 1 the reader moves there however briefly vCPU 0 has idled, and its later reads
    // complete where it runs.
    for service_ns in [30_000.0, 200_000.0] {
        let runs = reader_runs(guest(Some(1)), service_ns);
        assert_eq!(runs[0], 0, "{service_ns} ns reads: {runs:?}");
        assert!(runs[1] > 50, "{service_ns} ns reads: {runs:?}");
    }
    // Mainline keeps it on its idle previous vCPU, woken from vCPU 1 every time.
    let runs = reader_runs(guest(None), 30_000.0);
    assert_eq!(runs[1], 0, "{runs:?}");
    assert!(runs[0] > 200, "{runs:?}");
}

#[test]
fn the_inferred_takeover_needs_the_previous_vcpu_idle_longer_than_it() {
    let pack = serde_json::json!({"margin_pct": 15.0, "idle_takeover_us": 70.0});
    // A 200 µs read leaves vCPU 0 idle past 70 µs: the completion's wake-up on vCPU 1 takes
    // the reader there. A 30 µs read does not: vCPU 0 keeps it (it has room).
    let long = reader_runs(inferred_guest(pack.clone()), 200_000.0);
    assert!(long[0] == 0 && long[1] > 50, "{long:?}");
    let short = reader_runs(inferred_guest(pack), 30_000.0);
    assert!(short[1] == 0 && short[0] > 200, "{short:?}");
    let rule = VcpuPack::Inferred { margin_pct: 15.0, idle_takeover_us: Some(70.0) };
    assert!(!rule.idle_takeover(70_000) && rule.idle_takeover(70_001));
    // 85% of 1024 is 870.4.
    assert!(rule.has_room(500, 370, 1024) && !rule.has_room(500, 371, 1024));
    assert!(!VcpuPack::Inferred { margin_pct: 15.0, idle_takeover_us: None }.idle_takeover(u64::MAX));
}

#[test]
fn a_mask_or_a_limit_out_of_range_or_an_unknown_field_is_an_error_naming_it() {
    let mut doc: serde_json::Value = serde_json::from_str(&common::preset("kvm-guest-2cpu")).unwrap();
    doc["vcpu_pack"] = serde_json::json!({"flags": 16, "util_limit_pct": 70.0});
    let e = Platform::from_json(&doc.to_string(), "kvm").unwrap_err().to_string();
    assert!(e.contains("vcpu_pack.flags") && e.contains("0..15"), "{e}");
    doc["vcpu_pack"] = serde_json::json!({"flags": 15, "util_limit_pct": 120.0});
    let e = Platform::from_json(&doc.to_string(), "kvm").unwrap_err().to_string();
    assert!(e.contains("vcpu_pack.util_limit_pct") && e.contains("0..100"), "{e}");
    doc["vcpu_pack"] = serde_json::json!({"flags": 15, "util_limit_pct": 70.0, "margin_pct": 15.0});
    let e = Platform::from_json(&doc.to_string(), "kvm").unwrap_err().to_string();
    assert!(e.contains("vcpu_pack") && e.contains("not both"), "{e}");
    doc["vcpu_pack"] = serde_json::json!({"margin_pct": 120.0});
    let e = Platform::from_json(&doc.to_string(), "kvm").unwrap_err().to_string();
    assert!(e.contains("vcpu_pack.margin_pct") && e.contains("0..100"), "{e}");
    doc["vcpu_pack"] = serde_json::json!({"margin": 15.0});
    let e = Platform::from_json(&doc.to_string(), "kvm").unwrap_err().to_string();
    assert!(e.contains("margin"), "{e}");
}

#[test]
fn room_is_a_utilisation_below_the_limit_and_each_bit_its_placement() {
    let pack = VcpuPack::Read { flags: VcpuPack::SYNC_WAKE | VcpuPack::NEW_TASK, util_limit_pct: 70.0 };
    // 70% of 1024 is 716.8: strictly below it.
    assert!(pack.util_fits(716, 1024));
    assert!(!pack.util_fits(717, 1024));
    assert!(!VcpuPack::Read { flags: 15, util_limit_pct: 0.0 }.util_fits(0, 1024));
    assert!(pack.packs(VcpuPack::SYNC_WAKE) && pack.packs(VcpuPack::NEW_TASK));
    assert!(!pack.packs(VcpuPack::IRQ_ON_IDLE) && !pack.packs(VcpuPack::WAKE));
    // The inferred rule has no bits.
    assert!(!VcpuPack::Inferred { margin_pct: 15.0, idle_takeover_us: None }.packs(VcpuPack::WAKE));
}

#[test]
fn a_new_task_starts_on_the_forking_vcpu_while_it_has_room() {
    // A shell loop of a null program (spawn): the shell sleeps until its child's exec, whose
    // wake-up preempts the child where the two share a vCPU. With the inferred packing each
    // child starts on the shell's vCPU, which has room however busy it is (a
    // dead child takes its utilisation with it); with the read one most do (the shell runs
    // there alone, under 70% busy): about one preemption a program. Without, fork balancing
    // sends each child to the idle vCPU and the wake-up preempts nothing.
    let preempted_per_program = |pack: Option<serde_json::Value>| {
        let mut doc: serde_json::Value = serde_json::from_str(&common::quiet_preset("kvm-guest-2cpu")).unwrap();
        match pack {
            Some(rule) => doc["vcpu_pack"] = rule,
            None => drop(doc.as_object_mut().unwrap().remove("vcpu_pack")),
        }
        let cfg = SimConfig {
            governor: "performance:kernel=6.18".into(),
            workload: "spawn:programs=500".into(),
            timeline: true,
            ..SimConfig::default()
        };
        let r = dvfslab_sim::simulate(&doc.to_string(), "kvm", &cfg).unwrap();
        let tl = r.timeline.as_ref().unwrap();
        let preempted = tl.switch_prev_state.iter().zip(&tl.switch_prev).filter(|&(&s, &p)| s == 'R' && p > 0);
        preempted.count() as f64 / 500.0
    };
    let inferred = preempted_per_program(Some(serde_json::json!({"margin_pct": 15.0})));
    let read = preempted_per_program(Some(serde_json::json!({"flags": 8, "util_limit_pct": 70.0})));
    let mainline = preempted_per_program(None);
    assert!(
        inferred > 0.9 && read > 0.8 && mainline < 0.1,
        "preemptions a program: {inferred} inferred, {read} read, {mainline} not"
    );
}

#[test]
fn a_send_cut_short_by_a_switch_taken_back_still_lets_the_clock_move_on() {
    // gitsource's shells on the guest packing by the read rule, at a seed where a vCPU
    // sending an IPI had its hold lowered by a switch taken back: its task was then handed
    // empty segments that ended where they began, and the clock stopped at 0.28 s (which the
    // simulator now reports as an error rather than spinning).
    let mut doc: serde_json::Value = serde_json::from_str(&common::preset("kvm-guest-2cpu")).unwrap();
    doc["vcpu_pack"] = serde_json::json!({"flags": PACK_ALL, "util_limit_pct": 70.0});
    let plat = Platform::from_json(&doc.to_string(), "kvm").unwrap();
    let cfg = SimConfig {
        governor: "performance:kernel=6.18.44".into(),
        workload: "gitsource:commands=100000,scripts=2,discard=1,device=virtio,autogroup=1,warmup_ms=100".into(),
        duration_ns: Some(RUN_NS),
        seed: 1,
        ..SimConfig::default()
    };
    let result = Sim::new(plat, &cfg).unwrap().run();
    assert!(result.is_ok(), "{:?}", result.err());
}
