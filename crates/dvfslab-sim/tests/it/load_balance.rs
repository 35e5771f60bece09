//! The periodic balancer between busy CPUs (sched_balance_rq's migrate_load): tasks that
//! never sleep are shared out by load, not left where fork placement put them.

use crate::common;

/// Each task's share of a CPU from `from_ns` on, by its running time in the switch trace.
fn cpu_shares(workload: &str, kernel: &str, duration_ns: u64, from_ns: u64) -> Vec<f64> {
    let json = common::quiet_preset("kvm-guest-2cpu");
    let cfg = dvfslab_sim::SimConfig {
        governor: format!("performance:kernel={kernel}"),
        workload: workload.into(),
        duration_ns: Some(duration_ns),
        timeline: true,
        ..dvfslab_sim::SimConfig::default()
    };
    let r = dvfslab_sim::simulate(&json, "kvm-guest-2cpu", &cfg).unwrap();
    let tl = r.timeline.expect("a timeline");
    let mut ran = vec![0u64; tl.task_names.len()];
    let mut since: Vec<Option<(i64, u64)>> = vec![None; 8];
    for i in 0..tl.switch_time_ns.len() {
        let (t, cpu) = (tl.switch_time_ns[i].max(from_ns), tl.switch_cpu[i] as usize);
        if let Some((task, start)) = since[cpu] {
            if task >= 0 {
                ran[task as usize] += t - start;
            }
        }
        since[cpu] = Some((tl.switch_next[i], t));
    }
    for (task, start) in since.into_iter().flatten() {
        if task >= 0 {
            ran[task as usize] += duration_ns - start.max(from_ns);
        }
    }
    ran.iter().map(|&ns| ns as f64 / (duration_ns - from_ns) as f64).collect()
}

#[test]
fn three_cpu_bound_tasks_on_two_cpus_share_them_by_turns() {
    // Fork placement puts two on one CPU and one on the other. The lone task's CPU is fully
    // busy at half the overloaded one's load: the average lies between, the imbalance is half
    // a task's load, which a task fits once a balance has failed (its load halved): the tasks
    // take turns, each nearer two thirds of a CPU than one whole or a half.
    for kernel in ["5.4", "6.18"] {
        let shares = cpu_shares("cpu-bound:threads=3", kernel, 3_000_000_000, 500_000_000);
        assert_eq!(shares.len(), 3, "{shares:?}");
        for s in &shares {
            assert!((0.45..0.85).contains(s), "{kernel}: {shares:?}");
        }
    }
}

#[test]
fn two_cpu_bound_tasks_on_two_cpus_stay_put() {
    // Each CPU fully busy with one task: balanced, each task keeps its CPU.
    let shares = cpu_shares("cpu-bound:threads=2", "6.18", 1_000_000_000, 100_000_000);
    for s in &shares {
        assert!(*s > 0.99, "{shares:?}");
    }
}
