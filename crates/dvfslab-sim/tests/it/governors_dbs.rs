//! Scenarios for the sampling governors, ondemand and conservative (docs/governors.md).

use crate::common;

use common::preset;
use dvfslab_sim::observe::Decision;
use dvfslab_sim::{simulate, SimConfig, SimResult};

/// 4C/8T, one package-wide frequency domain, a policy per CPU; intel_cpufreq exposes
/// 0.8–3.9 GHz in 100 MHz steps; HZ=250, so the default sampling rate on 6.18 is 8 ms.
const SKYLAKE: &str = "skylake-e3-1240v5";
const SKYLAKE_MAX_KHZ: u32 = 3_900_000;

fn simulate_explained(governor: &str, workload: &str, duration_s: f64) -> Result<SimResult, String> {
    let cfg = SimConfig {
        governor: governor.into(),
        workload: workload.into(),
        duration_ns: Some((duration_s * 1e9) as u64),
        seed: 1,
        explain: true,
        ..SimConfig::default()
    };
    simulate(&preset(SKYLAKE), SKYLAKE, &cfg).map_err(|e| e.to_string())
}

fn run(governor: &str, workload: &str, duration_s: f64) -> SimResult {
    simulate_explained(governor, workload, duration_s).unwrap_or_else(|e| panic!("{governor}: {e}"))
}

fn decisions(r: &SimResult) -> &[Decision] {
    r.decisions.as_deref().expect("explain was on")
}

fn input(d: &Decision, name: &str) -> f64 {
    d.inputs.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("no input {name} in {d:?}")).1
}

/// Average frequency (kHz) of the busiest CPU while it was busy.
fn busiest_avg_khz(r: &SimResult) -> f64 {
    let c = r.summary.per_cpu.iter().max_by(|a, b| a.busy_pct.total_cmp(&b.busy_pct)).expect("CPUs");
    c.avg_freq_khz
}

/// When a policy first resolved a request to the maximum (ns).
fn first_at_max_ns(r: &SimResult) -> u64 {
    decisions(r).iter().find(|d| d.resolved_khz == SKYLAKE_MAX_KHZ).map(|d| d.time_ns).expect("reached the maximum")
}

mod aliasing {
    use super::*;

    // One thread wakes every 100 ms and runs about 40–47 ms (95 % of its time is memory
    // stalls, so the busy time hardly depends on the frequency), then sleeps.
    const HALF_BUSY: &str = "periodic:threads=1,run_us=40000,period_us=100000,mem_frac=0.95";

    #[test]
    fn sampling_every_50_ms_sees_half_load_and_never_ramps() {
        // Sampling is driven by scheduler callbacks: the sample at a wake-up is due 50 ms
        // later, when the CPU is already asleep, so the next one comes at the next wake-up and
        // every window is one whole period, half busy. The frequency settles where ondemand
        // maps ~45 % (about 2.2 GHz), never at the maximum.
        let r = run("ondemand:sampling_rate=50000", HALF_BUSY, 2.0);
        let loads: Vec<f64> = decisions(&r).iter().skip(2).map(|d| input(d, "load")).collect();
        assert!(!loads.is_empty());
        assert!(loads.iter().all(|&l| (35.0..=55.0).contains(&l)), "loads {loads:?}");
        assert!(decisions(&r).iter().all(|d| d.resolved_khz < 3_000_000), "{:?}", decisions(&r));
        let avg = busiest_avg_khz(&r);
        assert!((1_500_000.0..2_600_000.0).contains(&avg), "avg {avg} kHz");
    }

    #[test]
    fn sampling_every_10_ms_ramps_during_the_busy_halves() {
        // Windows of 10 ms fall inside the busy half (load 100 -> maximum); the sample at each
        // wake-up follows a long idle and reuses the load from before it, so the busy half
        // starts at the maximum too.
        let r = run("ondemand:sampling_rate=10000", HALF_BUSY, 2.0);
        let avg = busiest_avg_khz(&r);
        assert!(avg > 3_600_000.0, "avg {avg} kHz");
        let slow = busiest_avg_khz(&common::run(SKYLAKE, "ondemand:sampling_rate=50000", HALF_BUSY, 2.0, 1));
        assert!(avg > slow + 1_000_000.0, "{avg} vs {slow}");
    }
}

mod ramp {
    use super::*;

    #[test]
    fn ondemand_jumps_to_the_maximum_at_the_first_busy_sample() {
        let r = run("ondemand", "cpu-bound:threads=1", 1.0);
        let first = decisions(&r).iter().find(|d| d.resolved_khz == SKYLAKE_MAX_KHZ).expect("reached the maximum");
        assert_eq!(input(first, "load"), 100.0);
        // The first sample (at the task's start) sees an empty window; the next, 8 ms later,
        // a fully busy one.
        assert!(first.time_ns <= 8_000_000, "at {} ns", first.time_ns);
        assert!(busiest_avg_khz(&r) > 3_850_000.0, "{}", busiest_avg_khz(&r));
    }

    #[test]
    fn conservative_climbs_step_by_step_and_later() {
        let od = run("ondemand", "cpu-bound:threads=1", 1.0);
        let cs = run("conservative", "cpu-bound:threads=1", 1.0);
        // 5 % of 3.9 GHz per 8 ms sample: from 0.8 GHz, 16 steps (≈ 128 ms).
        let ups: Vec<&Decision> = decisions(&cs).iter().take_while(|d| d.raw_khz < SKYLAKE_MAX_KHZ).collect();
        assert!(ups.len() >= 15, "{} steps", ups.len());
        for pair in ups.windows(2) {
            assert_eq!(pair[1].raw_khz - pair[0].raw_khz, 195_000, "{pair:?}");
            assert_eq!(pair[1].time_ns - pair[0].time_ns, 8_000_000, "{pair:?}");
            assert!(pair[1].resolved_khz >= pair[0].resolved_khz);
        }
        let (t_od, t_cs) = (first_at_max_ns(&od), first_at_max_ns(&cs));
        assert!(t_cs > 100_000_000 && t_cs > 10 * t_od, "ondemand {t_od} ns, conservative {t_cs} ns");
        // Both end up at the maximum; conservative's climb costs some of the average.
        let (f_od, f_cs) = (busiest_avg_khz(&od), busiest_avg_khz(&cs));
        assert!(f_cs > 3_400_000.0 && f_cs < f_od, "ondemand {f_od}, conservative {f_cs}");
    }

    #[test]
    fn conservative_with_freq_step_0_never_moves() {
        let r = run("conservative:freq_step=0", "cpu-bound:threads=1", 0.5);
        assert!(decisions(&r).is_empty(), "{:?}", decisions(&r));
        assert!((busiest_avg_khz(&r) - 800_000.0).abs() < 1_000.0, "{}", busiest_avg_khz(&r));
    }

    #[test]
    fn default_sampling_rate_follows_kernel_and_driver() {
        // 6.18 on intel_cpufreq: max(2 ticks, 500 µs) = 8 ms. 5.9 on acpi-cpufreq (10 µs):
        // min(1000 × 10 µs, 10 ms) = 10 ms, so samples land on the first tick after 10 ms.
        for (gov, rate_us, gap_ns) in [
            ("conservative", 8_000.0, 8_000_000),
            ("conservative:kernel=5.9,driver=acpi-cpufreq", 10_000.0, 12_000_000),
            ("conservative:sampling_rate=20000", 20_000.0, 20_000_000),
        ] {
            let r = run(gov, "cpu-bound:threads=1", 0.3);
            let ups = decisions(&r);
            assert!(ups.len() > 5, "{gov}");
            assert!(ups.windows(2).take(5).all(|p| p[1].time_ns - p[0].time_ns == gap_ns), "{gov}: {ups:?}");
            let od = run(&gov.replace("conservative", "ondemand"), "periodic:run_us=1000,period_us=50000", 0.3);
            assert_eq!(input(&decisions(&od)[0], "sampling_rate_us"), rate_us, "{gov}");
        }
    }
}

mod tunables {
    use super::*;

    #[test]
    fn defaults_run_and_are_reported() {
        let r = run("ondemand", "cpu-bound:threads=1", 0.1);
        let d = &decisions(&r)[0];
        assert_eq!((input(d, "up_threshold"), input(d, "powersave_bias")), (95.0, 0.0));
        let r = run("conservative", "cpu-bound:threads=1", 0.1);
        let d = &decisions(&r)[0];
        assert_eq!((input(d, "up_threshold"), input(d, "down_threshold")), (80.0, 20.0));
    }

    #[test]
    fn bad_tunables_are_errors_naming_them() {
        let cases = [
            ("ondemand:up_threshold=101", "up_threshold", "out of range"),
            ("ondemand:up_threshold=10", "up_threshold", "out of range"),
            ("ondemand:sampling_down_factor=0", "sampling_down_factor", "out of range"),
            ("ondemand:sampling_down_factor=100001", "sampling_down_factor", "out of range"),
            ("ondemand:powersave_bias=1001", "powersave_bias", "out of range"),
            ("ondemand:sampling_rate=-1", "sampling_rate", "out of range"),
            ("ondemand:freq_step=5", "freq_step", "unknown tunable"),
            // io_is_busy is 0 or 1 (or "kernel", should_io_be_busy); 1 was refused before it was modelled.
            ("ondemand:io_is_busy=2", "io_is_busy", "out of range"),
            ("conservative:up_threshold=101", "up_threshold", "out of range"),
            ("conservative:down_threshold=0", "down_threshold", "out of range"),
            ("conservative:freq_step=101", "freq_step", "out of range"),
            ("conservative:sampling_down_factor=11", "sampling_down_factor", "out of range"),
            ("conservative:powersave_bias=1", "powersave_bias", "unknown tunable"),
            ("conservative:io_is_busy=1", "io_is_busy", "unknown tunable"),
            ("conservative:up_threshold=high", "up_threshold", "expected a number"),
        ];
        for (gov, name, what) in cases {
            let Err(err) = simulate_explained(gov, "cpu-bound:threads=1", 0.01) else { panic!("{gov} was accepted") };
            assert!(err.contains(name) && err.contains(what), "{gov}: {err}");
        }
    }

    #[test]
    fn powersave_bias_alternates_below_the_maximum() {
        // 10 % bias on a busy CPU: 3.9 GHz · 0.9 = 3.51 GHz, between 3.5 and 3.6 GHz, so each
        // 8 ms period asks for 3.6 GHz for 800 µs, then 3.5 GHz for 7200 µs. Samples only come
        // with scheduler callbacks, here the 4 ms tick: the switch down waits for the next tick.
        let r = run("ondemand:powersave_bias=100", "cpu-bound:threads=1", 0.5);
        let after_start = &decisions(&r)[1..];
        assert!(after_start.len() > 60);
        for (i, pair) in after_start.windows(2).enumerate() {
            let (hi_first, gap_ns) = if i % 2 == 0 { (true, 4_000_000) } else { (false, 8_000_000) };
            let expected = if hi_first { [3_600_000, 3_500_000] } else { [3_500_000, 3_600_000] };
            assert_eq!([pair[0].resolved_khz, pair[1].resolved_khz], expected, "{pair:?}");
            assert_eq!(pair[1].time_ns - pair[0].time_ns, gap_ns, "{pair:?}");
        }
        // (4 ms · 3.6 + 8 ms · 3.5) / 12 ms ≈ 3.53 GHz, less the first 8 ms at 0.8 GHz.
        let avg = busiest_avg_khz(&r);
        assert!((3_450_000.0..3_550_000.0).contains(&avg), "avg {avg} kHz");
    }
}

mod remote_callbacks {
    use super::*;

    #[test]
    fn ondemand_ignores_wake_ups_enqueued_from_another_policy() {
        // pipe-test pins its two tasks on two cores: with acpi-cpufreq each CPU is its own
        // policy, and each hand-over is enqueued by the other CPU (same LLC), a remote callback.
        // dbs_update_util_handler (drivers/cpufreq/cpufreq_governor.c) returns at once unless
        // cpufreq_this_cpu_can_update (cpufreq_can_do_remote_dvfs, 4.14+) allows it, and
        // acpi-cpufreq does not set dvfs_possible_from_any_cpu. Sampling on those callbacks
        // too made 58 decisions in 0.3 s at 5.9; the policies' own callbacks make 53.
        let r = run("ondemand:kernel=5.9,driver=acpi-cpufreq", "pipe-test:loops=3000,work_us=100", 0.3);
        assert!(decisions(&r).len() <= 55, "{} decisions", decisions(&r).len());
    }
}
