//! powernv-cpufreq on POWER8: the global (voltage) P-state falls slower than the local one.

use crate::common;

use std::rc::Rc;

use dvfslab_sim::hw::platform::Platform;
use dvfslab_sim::sched::task::{Amount, Op};
use dvfslab_sim::workload::{Better, Metric, RunStats, TaskSpec, Workload};
use dvfslab_sim::{Sim, SimConfig, SimResult};

/// A 300 ms burst on CPU 0, then a light tick of work every 50 ms on the same CPU (so that a
/// sampling governor sees the load drop and lowers the local P-state).
struct BurstThenLight;

impl Workload for BurstThenLight {
    fn tasks(&self, _: &Platform) -> Vec<TaskSpec> {
        let program: Rc<[Op]> = Rc::from(vec![
            Op::Run { cycles: Amount::Fixed(3.325e9 * 0.3), mem_frac: 0.0 },
            Op::Run { cycles: Amount::Fixed(3.325e6 * 0.1), mem_frac: 0.0 },
            Op::Sleep { ns: Amount::Fixed(50e6) },
            Op::Jump { to: 1 },
        ]);
        vec![TaskSpec::new("burst", program).pinned(vec![0])]
    }
    fn default_duration_ns(&self) -> u64 {
        8_000_000_000
    }
    fn metric(&self, s: &RunStats) -> Metric {
        Metric { name: "work".into(), value: s.work_done, unit: "cycles".into(), better: Better::Higher }
    }
}

fn run(governor: &str) -> SimResult {
    let plat = Platform::from_json(&common::preset("power8-powernv"), "power8-powernv").unwrap();
    let cfg = SimConfig { governor: governor.into(), timeline: true, ..SimConfig::default() };
    Sim::with_workload(plat, &cfg, Box::new(BurstThenLight), "burst".into()).unwrap().run().unwrap()
}

/// The global P-state of the burst's policy at time `t_s`, from the recorded changes.
fn global_at(r: &SimResult, cpu: u32, t_s: f64) -> u32 {
    let tl = r.timeline.as_ref().unwrap();
    let t = (t_s * 1e9) as u64;
    let mut khz = 0;
    for i in 0..tl.global_time_ns.len() {
        if tl.global_cpu[i] == cpu && tl.global_time_ns[i] <= t {
            khz = tl.global_khz[i];
        }
    }
    khz
}

fn busy_cpu(r: &SimResult) -> u32 {
    r.summary.per_cpu.iter().max_by(|a, b| a.busy_pct.total_cmp(&b.busy_pct)).unwrap().cpu as u32
}

#[test]
fn global_pstate_descends_over_five_seconds_after_a_burst() {
    let r = run("ondemand");
    let cpu = busy_cpu(&r);
    let min = 2_061_000;
    // During the burst ondemand runs the core at the top; afterwards the local request drops
    // to the minimum within a sample, but the global one stays up and falls along the parabola.
    assert_eq!(global_at(&r, cpu, 0.25), 3_690_000);
    let g = |t| global_at(&r, cpu, t);
    assert!(g(1.0) > min + 1_000_000, "1 s after: {}", g(1.0));
    assert!(g(1.0) >= g(2.5) && g(2.5) >= g(4.5), "{} {} {}", g(1.0), g(2.5), g(4.5));
    assert!(g(2.5) > g(4.5), "still descending: {} {}", g(2.5), g(4.5));
    assert_eq!(g(6.0), min, "ramp over by ~5.1 s after the drop");
}

#[test]
fn without_slow_rampdown_the_global_follows_the_local() {
    let r = run("ondemand:slow_rampdown=0");
    let cpu = busy_cpu(&r);
    assert_eq!(global_at(&r, cpu, 1.0), 2_061_000);
    // Holding the voltage costs energy.
    let slow = run("ondemand");
    assert!(slow.summary.energy_j > r.summary.energy_j, "{} vs {}", slow.summary.energy_j, r.summary.energy_j);
}

/// The global P-state steps only when the ramp timer fires, not at every ondemand sample.
///
/// `__cpufreq_driver_target` (drivers/cpufreq/cpufreq.c) returns before the driver when the
/// request resolves to the current table entry (5.14+: `__resolve_freq` before the
/// `policy->cur` check; 4.7–5.13: the same check on the table entry in `__target_index`), so
/// ondemand's proportional requests at the minimum never reach `powernv_cpufreq_target_index`
/// and only `gpstate_timer_handler` (2 s period, last at 5.12 s) lowers the global P-state.
/// The timer is deferrable and pinned to the CPU that queued it (the burst's): due while that
/// CPU sleeps, it runs at the CPU's next wake-up, here within one 50 ms sleep.
#[test]
fn global_pstate_steps_at_the_ramp_timer() {
    let r = run("ondemand");
    let cpu = busy_cpu(&r);
    let g = |t| global_at(&r, cpu, t);
    // The local request drops to the minimum at 0.380 s; the timer comes due 2 s, 4 s and
    // 4.76 s (5120 ms of ramp) later, while the CPU sleeps.
    assert_eq!(g(2.385), 3_690_000);
    assert_eq!(g(2.435), 3_358_000);
    assert_eq!(g(4.385), 3_358_000);
    assert_eq!(g(4.435), 2_527_000);
    assert_eq!(g(5.195), 2_061_000);
    // Between timer firings the global P-state holds still.
    assert_eq!(g(1.0), g(2.3));
    assert_eq!(g(2.45), g(4.3));
}

/// With the CPU the ramp timer is pinned to asleep for good, the global P-state stays where
/// the ramp left it: the deferrable timer never runs.
#[test]
fn an_idle_core_keeps_its_global_pstate() {
    let burst_then_sleep = vec![
        Op::Run { cycles: Amount::Fixed(3.325e9 * 0.3), mem_frac: 0.0 },
        Op::Sleep { ns: Amount::Fixed(1e10) },
        Op::Jump { to: 1 },
    ];
    let plat = Platform::from_json(&common::preset("power8-powernv"), "power8-powernv").unwrap();
    let cfg = SimConfig {
        governor: "ondemand".into(),
        timeline: true,
        duration_ns: Some(8_000_000_000),
        ..SimConfig::default()
    };
    let workload = Box::new(common::PinnedPrograms(vec![(burst_then_sleep, 0)]));
    let r = Sim::with_workload(plat, &cfg, workload, "burst".into()).unwrap().run().unwrap();
    let cpu = busy_cpu(&r);
    assert_eq!(global_at(&r, cpu, 0.25), 3_690_000);
    assert_eq!(global_at(&r, cpu, 7.9), 3_690_000);
}

/// The ramp is as old as the oldest modelled kernel: 4.7's powernv_cpufreq_target_index
/// already holds the global P-state up.
#[test]
fn the_ramp_is_in_4_7() {
    let r = run("ondemand:kernel=4.7");
    let cpu = busy_cpu(&r);
    assert_eq!(global_at(&r, cpu, 0.25), 3_690_000);
    assert!(global_at(&r, cpu, 1.0) > 2_061_000, "{}", global_at(&r, cpu, 1.0));
}

/// Under schedutil powernv is driven by fast switch (`powernv_fast_switch`, 4.10+), which
/// writes the global P-state equal to the local one: no slow ramp. Before 4.10 the driver had
/// no fast switch and schedutil's requests went through `powernv_cpufreq_target_index`.
#[test]
fn schedutil_fast_switch_has_no_ramp() {
    let r = run("schedutil");
    let cpu = busy_cpu(&r);
    assert_eq!(global_at(&r, cpu, 1.0), 2_061_000, "global follows the local request at once");
    // powernv reports no latency (CPUFREQ_ETERNAL), so 4.9's default rate limit is ~4295 s:
    // one decision a run. A set rate limit lets the ramp show.
    let old = run("schedutil:kernel=4.9,rate_limit_us=10000");
    let old_cpu = busy_cpu(&old);
    assert!(global_at(&old, old_cpu, 1.0) > 2_061_000, "4.9: still ramping: {}", global_at(&old, old_cpu, 1.0));
}
