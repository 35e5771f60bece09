//! A guest's trapped instructions (`vm_exits`): every exec'd program's C library start-up
//! runs `EXEC_STARTUP_CPUIDS` CPUIDs, each taking the preset's `cpuid_us` on the host, the
//! task holding its vCPU meanwhile. Shown by a task that execs and works 10 µs in a loop on
//! the KVM guest (fixed 2.6 GHz), its background left out.

use std::rc::Rc;

use crate::common;

use dvfslab_sim::hw::platform::Platform;
use dvfslab_sim::sched::task::{Amount, Mark, Op};
use dvfslab_sim::workload::estimates::kernel;
use dvfslab_sim::workload::{Better, Metric, RunStats, TaskSpec, Workload};
use dvfslab_sim::{Sim, SimConfig, SimResult};

const RUN_NS: u64 = 20_000_000;

/// The quiet guest, with `vm_exits` as given (None: without).
fn guest(vm_exits: Option<serde_json::Value>) -> Platform {
    common::quiet_guest(&[("vm_exits", vm_exits)])
}

/// One task that execs, works 26,000 cycles (10 µs at 2.6 GHz) and counts, in a loop, on
/// `cpus`.
struct ExecLoop {
    cpus: Vec<usize>,
}

impl Workload for ExecLoop {
    fn tasks(&self, _: &Platform) -> Vec<TaskSpec> {
        let program: Rc<[Op]> = vec![
            Op::Exec { comm: "true" },
            Op::Run { cycles: Amount::Fixed(26_000.0), mem_frac: 0.0 },
            Op::Mark(Mark::Add { counter: 0, amount: 1 }),
            Op::Jump { to: 0 },
        ]
        .into();
        vec![TaskSpec::new("loop", program).pinned(self.cpus.clone())]
    }
    fn default_duration_ns(&self) -> u64 {
        RUN_NS
    }
    fn metric(&self, stats: &RunStats) -> Metric {
        let value = stats.counters.first().copied().unwrap_or(0) as f64;
        Metric { name: "execs".into(), value, unit: "ops".into(), better: Better::Higher }
    }
}

fn execs(plat: Platform, cpus: Vec<usize>) -> SimResult {
    let cfg =
        SimConfig { governor: "performance:kernel=6.18".into(), duration_ns: Some(RUN_NS), ..SimConfig::default() };
    Sim::with_workload(plat, &cfg, Box::new(ExecLoop { cpus }), "test".into()).unwrap().run().unwrap()
}

#[test]
fn each_exec_on_a_guest_waits_for_its_c_librarys_cpuids() {
    // Bare: 10 µs an exec, 2,000 in 20 ms. With 68 CPUIDs of 5 µs: 350 µs an exec, 57.
    let cpuid = serde_json::json!({"cpuid_us": 5.0});
    let bare = execs(guest(None), vec![0]).summary;
    let guest_run = execs(guest(Some(cpuid.clone())), vec![0]).summary;
    assert_eq!(kernel::EXEC_STARTUP_CPUIDS, 68.0);
    let expected = |exec_ns: f64| RUN_NS as f64 / exec_ns;
    assert!((bare.metric.value - expected(10_000.0)).abs() <= 1.0, "{}", bare.metric.value);
    assert!((guest_run.metric.value - expected(350_000.0)).abs() <= 1.0, "{}", guest_run.metric.value);
    // The time is the task's, its vCPU busy: spent, not idle.
    assert!(guest_run.per_cpu[0].busy_pct > 99.0, "{:?}", guest_run.per_cpu[0].busy_pct);
    // Free to move, the task pays the same wherever sched_exec puts it.
    let free = execs(guest(Some(cpuid)), vec![0, 1]).summary;
    assert!((free.metric.value - expected(350_000.0)).abs() <= 1.0, "{}", free.metric.value);
    // (It started on CPU 0; its first exec moved it to CPU 1, which then ran it throughout.)
    assert!(free.per_cpu[0].busy_pct < 1.0 && free.per_cpu[1].busy_pct > 99.0, "{:?}", free.per_cpu);
}

#[test]
fn the_recordings_startup_cycles_are_the_guest_presets_cpuids() {
    // The models take the recorded processes' CPUIDs out of their CPU at the guest preset's
    // cost: one value, the preset's.
    let doc: serde_json::Value = serde_json::from_str(&common::preset("kvm-guest-2cpu")).unwrap();
    let cpuid_us = doc["vm_exits"]["cpuid_us"]["value"].as_f64().unwrap();
    let recorded = kernel::EXEC_STARTUP_CPUIDS * cpuid_us * 1e-6 * 2.6e9;
    assert!((kernel::RECORDED_STARTUP_CYCLES - recorded).abs() < 1.0, "{recorded}");
}

#[test]
fn vm_exits_out_of_range_or_unknown_are_errors_naming_the_field() {
    let mut doc: serde_json::Value = serde_json::from_str(&common::preset("kvm-guest-2cpu")).unwrap();
    doc["vm_exits"] = serde_json::json!({"cpuid_us": -1.0});
    let e = Platform::from_json(&doc.to_string(), "kvm").unwrap_err().to_string();
    assert!(e.contains("vm_exits.cpuid_us") && e.contains("0..10000"), "{e}");
    doc["vm_exits"] = serde_json::json!({"rdtsc_us": 1.0});
    let e = Platform::from_json(&doc.to_string(), "kvm").unwrap_err().to_string();
    assert!(e.contains("rdtsc_us"), "{e}");
}
