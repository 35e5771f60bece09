//! The platform's switching costs (`sched_costs`): every switch to a task takes
//! `switch_cycles` at the CPU's speed before the task's own work goes on, and a task woken
//! from another CPU takes `remote_wake_us` more at its first run. Shown by a request/response
//! pair on the KVM guest (fixed 2.6 GHz, haltpoll's 1 µs exit), its background left out.

use crate::common;

use dvfslab_sim::hw::platform::Platform;
use dvfslab_sim::{Sim, SimConfig, SimResult};

/// 26,000 cycles: 10 µs at the guest's 2.6 GHz.
const BURST_CYCLES: f64 = 26_000.0;
const RUN_NS: u64 = 20_000_000;

/// The quiet guest without its vCPU IPI costs, with `sched_costs` as given (None: without).
fn guest(sched_costs: Option<serde_json::Value>) -> Platform {
    common::quiet_guest(&[("vcpu_wake", None), ("sched_costs", sched_costs)])
}

fn costs(switch_cycles: f64, remote_wake_us: f64) -> serde_json::Value {
    serde_json::json!({"switch_cycles": switch_cycles, "remote_wake_us": remote_wake_us})
}

/// A client and a server, pinned to `cpus`, each work 10 µs and then wake the other and
/// block: the client counts its round trips over 20 ms.
fn round_trips(plat: Platform, cpus: [usize; 2]) -> SimResult {
    let (client, server) = common::request_response(BURST_CYCLES);
    let cfg =
        SimConfig { governor: "performance:kernel=6.18".into(), duration_ns: Some(RUN_NS), ..SimConfig::default() };
    let tasks = vec![(client, cpus[0]), (server, cpus[1])];
    Sim::with_workload(plat, &cfg, Box::new(common::PinnedPrograms(tasks)), "test".into()).unwrap().run().unwrap()
}

/// Round trips expected in the 20 ms when each takes `trip_ns`.
fn expected(trip_ns: f64) -> f64 {
    RUN_NS as f64 / trip_ns
}

#[test]
fn on_one_cpu_each_switch_takes_the_platforms_cycles() {
    // Both on CPU 0: a round trip is two 10 µs bursts and two switches, the CPU never idle.
    // 2,600 cycles at 2.6 GHz are 1 µs a switch: 22 µs a trip against 20.
    let free = round_trips(guest(None), [0, 0]).summary;
    let costly = round_trips(guest(Some(costs(2_600.0, 0.0))), [0, 0]).summary;
    let (n_free, n_costly) = (free.metric.value, costly.metric.value);
    assert!((n_free - expected(20_000.0)).abs() <= 2.0, "{n_free} round trips without costs");
    assert!((n_costly - expected(22_000.0)).abs() <= 2.0, "{n_costly} round trips with 1 µs switches");
    // The CPU is busy through the switches: the time is spent, not lost.
    assert!(costly.per_cpu[0].busy_pct > 99.0, "{:?}", costly.per_cpu[0].busy_pct);
}

#[test]
fn a_task_woken_from_the_other_cpu_pays_the_remote_wake_at_its_first_run() {
    // Apart, each side is woken from the other vCPU, which leaves haltpoll (1 µs) and then
    // pays 3 µs before its burst: 2 × (1 + 3 + 10) = 28 µs a trip against 22.
    let apart_free = round_trips(guest(None), [0, 1]).summary.metric.value;
    let apart = round_trips(guest(Some(costs(0.0, 3.0))), [0, 1]).summary.metric.value;
    assert!((apart_free - expected(22_000.0)).abs() <= 2.0, "{apart_free} round trips without costs");
    assert!((apart - expected(28_000.0)).abs() <= 2.0, "{apart} round trips with a 3 µs remote wake");
    // Together on one CPU no wake-up comes from elsewhere: nothing more to pay.
    let together = round_trips(guest(Some(costs(0.0, 3.0))), [0, 0]).summary.metric.value;
    assert!((together - expected(20_000.0)).abs() <= 2.0, "{together} round trips on one CPU");
}

#[test]
fn sched_costs_out_of_range_or_unknown_are_errors_naming_the_field() {
    let mut doc: serde_json::Value = serde_json::from_str(&common::preset("kvm-guest-2cpu")).unwrap();
    doc["sched_costs"] = costs(-1.0, 0.0);
    let e = Platform::from_json(&doc.to_string(), "kvm").unwrap_err().to_string();
    assert!(e.contains("sched_costs.switch_cycles") && e.contains("0..1000000"), "{e}");
    doc["sched_costs"] = costs(1_000.0, 20_000.0);
    let e = Platform::from_json(&doc.to_string(), "kvm").unwrap_err().to_string();
    assert!(e.contains("sched_costs.remote_wake_us") && e.contains("0..10000"), "{e}");
    doc["sched_costs"] = serde_json::json!({"switch_us": 1.0});
    let e = Platform::from_json(&doc.to_string(), "kvm").unwrap_err().to_string();
    assert!(e.contains("switch_us"), "{e}");
}
