//! Scenarios of the intel_pstate governor (active mode): the response to a load step per
//! algorithm, the global limits, HWP's EPP, and tunable errors.

use crate::common;

use dvfslab_sim::observe::Decision;
use dvfslab_sim::{simulate, Platform, SimConfig, SimResult};

const SAMPLE_NS: u64 = 10_000_000;

fn config(governor: &str, workload: &str, duration_s: f64) -> SimConfig {
    SimConfig {
        governor: governor.into(),
        workload: workload.into(),
        duration_ns: Some((duration_s * 1e9) as u64),
        explain: true,
        ..SimConfig::default()
    }
}

fn explain(platform: &str, governor: &str, workload: &str, duration_s: f64) -> SimResult {
    let cfg = config(governor, workload, duration_s);
    simulate(&with_hwp(platform), platform, &cfg).unwrap_or_else(|e| panic!("{governor}: {e}"))
}

/// The preset marked HWP-capable, so that every algorithm can be compared on one part: the
/// mark only lets `algorithm=hwp` run, it changes nothing else.
fn with_hwp(platform: &str) -> String {
    let json = common::preset(platform);
    if json.contains("\"hwp\": true") {
        return json;
    }
    json.replacen("\"vendor\": \"intel\",", "\"vendor\": \"intel\", \"hwp\": true,", 1)
}

fn error(platform: &str, governor: &str) -> String {
    let cfg = config(governor, "cpu-bound", 0.01);
    match simulate(&common::preset(platform), platform, &cfg) {
        Ok(_) => panic!("{governor} on {platform} should fail"),
        Err(e) => e.to_string(),
    }
}

fn input(d: &Decision, name: &str) -> f64 {
    d.inputs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v).unwrap_or_else(|| panic!("no input {name}"))
}

fn decisions(r: &SimResult) -> &[Decision] {
    r.decisions.as_deref().expect("explain on")
}

/// The policy of the one CPU whose busy share lies in `lo..hi` percent.
fn policy_of_cpu_busy(platform: &str, r: &SimResult, lo: f64, hi: f64) -> usize {
    let cpus: Vec<usize> =
        r.summary.per_cpu.iter().filter(|c| c.busy_pct > lo && c.busy_pct < hi).map(|c| c.cpu).collect();
    assert_eq!(cpus.len(), 1, "CPUs {lo}..{hi} % busy: {cpus:?}");
    let plat = Platform::from_json(&common::preset(platform), platform).unwrap();
    plat.cpus[cpus[0]].policy
}

mod step_response {
    use super::*;

    const HSW: &str = "haswell-e5-2670v3-2s";
    /// Two threads that never finish; the second starts at 300 ms on an idle core.
    const STEP: &str = "periodic:threads=2,run_us=10000000,period_us=100000000,offset_us=300000";
    const STEP_NS: u64 = 300_000_000;
    /// 1-core turbo of the part: 31 × 100 MHz (two active cores still get it).
    const TOP_KHZ: u32 = 3_100_000;

    /// Samples from the step to the first request of the top P-state, and the decisions
    /// of the stepping CPU's policy.
    fn samples_to_top(governor: &str) -> (u64, Vec<Decision>) {
        let r = explain(HSW, governor, STEP, 0.6);
        let policy = policy_of_cpu_busy(HSW, &r, 40.0, 60.0);
        let mine: Vec<Decision> = decisions(&r).iter().filter(|d| d.policy == policy).cloned().collect();
        assert!(mine.iter().filter(|d| d.time_ns > 0).all(|d| d.time_ns >= STEP_NS), "sampled while idle");
        let top = mine.iter().find(|d| d.resolved_khz == TOP_KHZ).unwrap_or_else(|| panic!("{governor}: never top"));
        assert_eq!(top.hw_khz, TOP_KHZ);
        ((top.time_ns - STEP_NS).div_ceil(SAMPLE_NS), mine)
    }

    #[test]
    fn load_based_reaches_the_top_within_one_full_sample() {
        let (n, mine) = samples_to_top("intel_pstate:algorithm=0");
        // The first sample spans the idle time before the step (busy 3 %); the next is all busy.
        assert_eq!(n, 2, "{mine:?}");
        let first = &mine[1];
        assert!(input(first, "busy_frac") < 0.05 && first.resolved_khz == 1_200_000, "{first:?}");
        let second = &mine[2];
        assert_eq!(input(second, "busy_frac"), 1.0);
        assert_eq!(input(second, "target_pstate"), 38.0); // 31 + 31/4 = 38, clamped to 31
        assert!(mine.iter().skip(1).all(|d| input(d, "iowait_boost") == 0.0));
    }

    #[test]
    fn pid_climbs_one_p_state_per_sample() {
        let (n, mine) = samples_to_top("intel_pstate:algorithm=1");
        // The PID samples from the CPU's scheduler callbacks once sample_rate_ms (10 ms) has
        // passed (intel_pstate_update_util, 4.6+), not on a 10 ms timer: the first sample is
        // the first callback after the step (the tick at 304 ms, spanning the idle time), then
        // the first tick (4 ms period) at least 10 ms after the last sample, i.e. every 12 ms.
        assert_eq!(mine[1].time_ns, STEP_NS + 4_000_000, "{mine:?}");
        for pair in mine[2..].windows(2) {
            assert_eq!(pair[1].time_ns - pair[0].time_ns, 12_000_000, "{pair:?}");
        }
        // The first sample drops to the minimum (idle time scales core_busy down), then each
        // fully busy sample adds one P-state: 12 → 31 is 19 steps of 12 ms.
        assert_eq!(n, 24, "{mine:?}");
        let first = &mine[1];
        assert!(input(first, "core_busy") < 5.0 && input(first, "pid_out") > 15.0, "{first:?}");
        for d in &mine[2..21] {
            assert_eq!(input(d, "pid_out"), -1.0, "{d:?}");
            assert_eq!(input(d, "target_pstate"), input(d, "current_pstate") + 1.0);
            // A new P-state waits for Haswell's 500-µs grid: a sample's first slot or so runs
            // at the previous one, a few tenths of a percent of busy.
            assert!((input(d, "core_busy") - 100.0).abs() < 0.5, "{d:?}");
        }
    }

    #[test]
    fn load_based_beats_pid_and_hwp_ramps_over_its_windows() {
        let (load, _) = samples_to_top("intel_pstate:algorithm=0");
        let (pid, _) = samples_to_top("intel_pstate:algorithm=1");
        assert!(load * 5 < pid, "load {load} vs pid {pid} samples");
        // HWP (10 ms windows, EPP 128): the window holding the step, then a busy one at 1.2 GHz
        // that picks ⌈12 / 0.45⌉ = 27, then the top. The window is the unit: at 1 ms the same
        // ramp takes 3 ms.
        for (spec, window_ns) in [("", 10_000_000), (",activity_window_us=1000", 1_000_000)] {
            let (_, mine) = samples_to_top(&format!("intel_pstate:algorithm=2{spec}"));
            let top = mine.iter().find(|d| d.resolved_khz == TOP_KHZ).unwrap();
            let after = top.time_ns - STEP_NS;
            assert!(after > window_ns && after <= 3 * window_ns, "{spec}: {after} ns");
        }
    }
}

mod limits {
    use super::*;

    const SNB: &str = "i7-2600k";

    fn busy_avg_khz(r: &SimResult) -> f64 {
        let busy: Vec<_> = r.summary.per_cpu.iter().filter(|c| c.busy_pct > 90.0).collect();
        assert_eq!(busy.len(), 1);
        busy[0].avg_freq_khz
    }

    #[test]
    fn max_perf_pct_caps_every_algorithm() {
        // ⌈38 · 50 %⌉ = 19: 1.9 GHz.
        for alg in 0..4 {
            let r = explain(SNB, &format!("intel_pstate:algorithm={alg},max_perf_pct=50"), "cpu-bound", 0.3);
            assert!(decisions(&r).iter().all(|d| d.resolved_khz <= 1_900_000), "algorithm {alg}");
            let avg = busy_avg_khz(&r);
            assert!(avg > 1_800_000.0 && avg <= 1_900_000.0, "algorithm {alg}: {avg}");
        }
    }

    #[test]
    fn no_turbo_caps_at_base() {
        for alg in 0..4 {
            let r = explain(SNB, &format!("intel_pstate:algorithm={alg},no_turbo=1"), "cpu-bound", 0.4);
            assert!(decisions(&r).iter().all(|d| d.resolved_khz <= 3_400_000), "algorithm {alg}");
            assert!(decisions(&r).iter().any(|d| d.resolved_khz == 3_400_000), "algorithm {alg}");
            for c in &r.summary.per_cpu {
                assert!(c.time_in_freq.keys().all(|k| k.parse::<u32>().unwrap() <= 3_400_000), "algorithm {alg}");
            }
        }
    }

    #[test]
    fn min_perf_pct_raises_every_request() {
        // ⌈38 · 80 %⌉ = 31: a light load never runs below 3.1 GHz.
        let light = "periodic:threads=2,run_us=1000,period_us=20000";
        for alg in 0..3 {
            let r = explain(SNB, &format!("intel_pstate:algorithm={alg},min_perf_pct=80"), light, 0.3);
            assert!(decisions(&r).iter().all(|d| d.resolved_khz >= 3_100_000), "algorithm {alg}");
            for c in &r.summary.per_cpu {
                assert!(c.time_in_freq.keys().all(|k| k.parse::<u32>().unwrap() >= 3_100_000), "algorithm {alg}");
            }
        }
    }

    #[test]
    fn explaining_does_not_change_the_run() {
        for alg in 0..4 {
            let gov = format!("intel_pstate:algorithm={alg},max_perf_pct=90");
            let wl = "periodic:threads=3,run_us=4000,period_us=10000,jitter_pct=30";
            let plain = common::run_on(&with_hwp(SNB), SNB, &gov, wl, 0.3, 7);
            let explained = simulate(&with_hwp(SNB), SNB, &SimConfig { seed: 7, ..config(&gov, wl, 0.3) }).unwrap();
            assert_eq!(plain.summary.energy_j, explained.summary.energy_j, "algorithm {alg}");
        }
    }

    #[test]
    fn performance_policy_requests_the_top_once() {
        let r = explain(SNB, "intel_pstate:algorithm=3", "cpu-bound", 0.3);
        assert!(decisions(&r).iter().all(|d| d.resolved_khz == 3_800_000 && d.time_ns == 0));
        assert!((busy_avg_khz(&r) - 3_800_000.0).abs() < 1_000.0); // one active core: 1C bin
    }
}

mod hwp {
    use super::*;

    /// The calibration of the window (intel_pstate_hwp.rs): from idle to the Skylake desktop's
    /// top in about 30 ms, as measured for Skylake's Speed Shift.
    #[test]
    fn the_desktop_ramps_from_idle_to_its_top_in_about_30_ms() {
        let r = explain("skylake-e3-1240v5", "intel_pstate:algorithm=2", "step-load:idle_ms=100,busy_ms=200", 0.3);
        let t_up = r.summary.metric.value;
        assert!((25.0..=35.0).contains(&t_up), "{t_up} ms");
    }

    #[test]
    fn energy_performance_preference_trades_speed_for_energy() {
        // 2.5 ms of work every 10 ms is 54 % busy at the 1.6 GHz minimum: above balanced's
        // 45 % target (0.9 · 128/255), below frugal's 90 %. (At 2 ms, 43.5 % busy, balanced and
        // frugal both sit at the minimum, and only a start-up transient of the idle governor
        // told them apart.)
        let light = "periodic:threads=4,run_us=2500,period_us=10000";
        let run = |epp: u32| {
            explain("i7-2600k", &format!("intel_pstate:algorithm=2,energy_performance_preference={epp}"), light, 1.0)
        };
        let (fast, balanced, frugal) = (run(0), run(128), run(255));
        let avg = |r: &SimResult| {
            let busy: Vec<f64> =
                r.summary.per_cpu.iter().filter(|c| c.busy_pct > 5.0).map(|c| c.avg_freq_khz).collect();
            busy.iter().sum::<f64>() / busy.len() as f64
        };
        assert!(avg(&fast) > avg(&balanced) && avg(&balanced) > avg(&frugal));
        assert!(fast.summary.energy_j > frugal.summary.energy_j);
        assert!(fast.summary.metric.value < frugal.summary.metric.value); // faster responses
    }
}

mod errors {
    use super::*;

    #[test]
    fn bad_tunables_name_the_tunable() {
        for (spec, name) in [
            ("intel_pstate:algorithm=4", "algorithm"),
            ("intel_pstate:algorithm=fast", "algorithm"),
            ("intel_pstate:max_perf_pct=150", "max_perf_pct"),
            ("intel_pstate:min_perf_pct=-5", "min_perf_pct"),
            ("intel_pstate:no_turbo=yes", "no_turbo"),
            ("intel_pstate:setpoint=0", "setpoint"),
            ("intel_pstate:activity_window_us=10", "activity_window_us"),
            ("intel_pstate:turbo=1", "turbo"),
        ] {
            let err = error("i7-2600k", spec);
            assert!(err.contains(name), "{spec}: {err}");
        }
    }

    #[test]
    fn the_driver_is_intel_only_and_cannot_be_swapped() {
        let err = error("juno-r2", "intel_pstate");
        assert!(err.contains("driver") && err.contains("intel_pstate"), "{err}");
        let err = error("i7-2600k", "intel_pstate:driver=acpi-cpufreq");
        assert!(err.contains("driver"), "{err}");
    }
}

/// `algorithm=hwp` runs only on a part whose platform file says `"hwp": true`: the Skylake
/// desktop has HWP, Haswell and Sandy Bridge have none.
#[test]
fn hwp_needs_an_hwp_capable_part() {
    let cfg = config("intel_pstate:algorithm=hwp", "cpu-bound", 0.05);
    assert!(simulate(&common::preset("skylake-e3-1240v5"), "skylake-e3-1240v5", &cfg).is_ok());
    for id in ["haswell-e5-2670v3-2s", "i7-2600k"] {
        let err = simulate(&common::preset(id), id, &cfg).err().expect("refused").to_string();
        assert!(err.starts_with("governor 'intel_pstate': algorithm: hwp needs an HWP-capable part"), "{err}");
        assert!(err.contains(id), "{err}");
        // The other algorithms still run there.
        assert!(simulate(&common::preset(id), id, &config("intel_pstate:algorithm=pid", "cpu-bound", 0.05)).is_ok());
    }
}
