//! End-to-end scenarios of the simulator: invariants that every run must keep.

use crate::common;

use common::run;

mod performance {
    use super::*;

    #[test]
    fn one_busy_core_runs_the_one_core_turbo_bin() {
        let r = run("haswell-e5-2670v3-2s", "performance", "cpu-bound:threads=1", 1.0, 0);
        let busy: Vec<_> = r.summary.per_cpu.iter().filter(|c| c.busy_pct > 50.0).collect();
        assert_eq!(busy.len(), 1);
        assert!((busy[0].avg_freq_khz - 3_100_000.0).abs() < 1_000.0, "{}", busy[0].avg_freq_khz);
    }

    #[test]
    fn twenty_four_busy_cores_run_the_all_core_bin() {
        // 12 busy cores per package: the 12C bin is 2.6 GHz.
        let r = run("haswell-e5-2670v3-2s", "performance", "cpu-bound:threads=24", 1.0, 0);
        let busy: Vec<_> = r.summary.per_cpu.iter().filter(|c| c.busy_pct > 50.0).collect();
        assert_eq!(busy.len(), 24);
        // One thread per core: CPUs n and n + 24 are SMT siblings.
        let cores: std::collections::BTreeSet<usize> = busy.iter().map(|c| c.cpu % 24).collect();
        assert_eq!(cores.len(), 24);
        for c in busy {
            assert!((c.avg_freq_khz - 2_600_000.0).abs() < 30_000.0, "cpu {} at {}", c.cpu, c.avg_freq_khz);
        }
    }

    #[test]
    fn powersave_runs_the_minimum() {
        let r = run("haswell-e5-2670v3-2s", "powersave", "cpu-bound:threads=4", 1.0, 0);
        for c in r.summary.per_cpu.iter().filter(|c| c.busy_pct > 0.0) {
            assert!((c.avg_freq_khz - 1_200_000.0).abs() < 1.0, "cpu {} at {}", c.cpu, c.avg_freq_khz);
        }
    }

    #[test]
    fn performance_beats_powersave_and_costs_more_power() {
        let p = run("skylake-e3-1240v5", "performance", "cpu-bound:threads=4", 1.0, 0).summary;
        let s = run("skylake-e3-1240v5", "powersave", "cpu-bound:threads=4", 1.0, 0).summary;
        assert!(p.metric.value > 3.0 * s.metric.value, "{} vs {}", p.metric.value, s.metric.value);
        assert!(p.avg_package_w > s.avg_package_w);
    }
}

mod invariants {
    use super::*;

    const PLATFORMS: &[&str] =
        &["haswell-e5-2670v3-2s", "skylake-e3-1240v5", "pixel6", "juno-r2", "hikey960", "i7-2600k", "power8-powernv"];

    #[test]
    fn frequencies_stay_in_the_hardware_table_and_util_in_range() {
        for &p in PLATFORMS {
            for gov in ["performance", "powersave", "userspace:scaling_setspeed=1000000"] {
                let r = run(p, gov, "periodic:threads=6,run_us=3000,period_us=9000,jitter_pct=30", 0.5, 3);
                let plat = dvfslab_sim::Platform::from_json(&common::preset(p), p).unwrap();
                for c in &r.summary.per_cpu {
                    let allowed = plat.hardware_freqs_khz(plat.cpus[c.cpu].cluster);
                    for khz in c.time_in_freq.keys() {
                        let khz: u32 = khz.parse().unwrap();
                        assert!(allowed.contains(&khz), "{p} {gov}: cpu {} ran {khz} kHz", c.cpu);
                    }
                    assert!(c.util_avg_max <= 1024, "{p}: util {}", c.util_avg_max);
                    let total: f64 = c.time_in_freq.values().sum();
                    assert!((total - r.summary.sim_time_s).abs() < 1e-6, "{p}: time in freq {total}");
                }
            }
        }
    }

    #[test]
    fn work_is_conserved() {
        // Fixed work per activation: what was handed to tasks is done, or still pending in the
        // one activation each task may have in flight at the end.
        let r = run("haswell-e5-2670v3-2s", "powersave", "periodic:threads=30,run_us=1500,period_us=5000", 2.0, 0);
        let s = &r.summary;
        let per_activation = 1500.0 * 2_300_000.0 / 1000.0;
        assert!(s.work_done_cycles <= s.work_submitted_cycles * (1.0 + 1e-12));
        assert!(s.work_submitted_cycles - s.work_done_cycles <= 30.0 * per_activation + 1.0);
        for (submitted, done) in &r.finished_work {
            assert!((submitted - done).abs() <= 1e-9 * submitted.max(1.0), "{submitted} vs {done}");
        }
        // Tasks between activations have done exactly what they were handed.
        assert!(!r.finished_work.is_empty());
    }

    #[test]
    fn energy_adds_up_and_rapl_agrees() {
        for &p in PLATFORMS {
            let r = run(p, "performance", "periodic:threads=3,run_us=2000,period_us=7000", 3.0, 1).summary;
            let cores: f64 = r.per_cpu.iter().map(|c| c.energy_j).sum();
            let uncore: f64 = r.packages.iter().map(|p| p.uncore_energy_j).sum();
            assert!((cores + uncore - r.energy_j).abs() < 1e-9 * r.energy_j, "{p}");
            let unit = 61.03515625e-6 * 4.0; // one unit per sample, 3 samples + end, at most
            for pk in &r.packages {
                assert!((pk.rapl_energy_j - pk.energy_j).abs() < unit, "{p}: {} vs {}", pk.rapl_energy_j, pk.energy_j);
            }
            assert!((r.avg_package_w - r.energy_j / r.sim_time_s).abs() < 1e-9);
        }
    }

    #[test]
    fn same_seed_same_result_other_seed_differs() {
        let w = "periodic:threads=8,run_us=1000,period_us=4000,jitter_pct=50";
        let a = run("skylake-e3-1240v5", "performance", w, 1.0, 7).summary;
        let b = run("skylake-e3-1240v5", "performance", w, 1.0, 7).summary;
        let c = run("skylake-e3-1240v5", "performance", w, 1.0, 8).summary;
        let strip = |mut s: dvfslab_sim::result::RunJson| {
            s.wall_time_s = 0.0;
            s.seed = 0;
            serde_json::to_string(&s).unwrap()
        };
        assert_eq!(strip(a.clone()), strip(b));
        assert_ne!(strip(a), strip(c));
    }

    #[test]
    fn idle_machine_sits_in_deep_states_at_idle_power() {
        let r = run("haswell-e5-2670v3-2s", "performance", "periodic:threads=1,run_us=100,period_us=100000", 2.0, 0);
        // 18 W per package when every core is power-gated (package C6), plus a sliver of work.
        assert!(r.summary.avg_package_w < 2.0 * 18.0 + 2.0, "{}", r.summary.avg_package_w);
        let c6: f64 = r.summary.per_cpu.iter().map(|c| c.time_in_idle_state["C6"].as_f64().unwrap()).sum();
        assert!(c6 > 0.9 * 48.0 * 2.0, "{c6}");
    }
}

mod warmup {
    use super::*;

    #[test]
    fn the_warm_up_is_left_out_of_every_figure() {
        let full = run("skylake-e3-1240v5", "schedutil:invariant=0", "netperf:test=tcp-stream", 1.0, 0).summary;
        let warm =
            run("skylake-e3-1240v5", "schedutil:invariant=0", "netperf:test=tcp-stream,warmup_ms=400", 1.0, 0).summary;
        assert!((warm.sim_time_s - 0.6).abs() < 1e-9, "{}", warm.sim_time_s);
        // Non-invariant schedutil starts low and climbs as util grows: the measured interval
        // after the warm-up runs faster on average than the whole run.
        assert!(warm.metric.value > full.metric.value, "{} vs {}", warm.metric.value, full.metric.value);
        // Energy, RAPL, busy time and residency all cover the measured 0.6 s.
        let cores: f64 = warm.per_cpu.iter().map(|c| c.energy_j).sum();
        let uncore: f64 = warm.packages.iter().map(|p| p.uncore_energy_j).sum();
        assert!((cores + uncore - warm.energy_j).abs() < 1e-9 * warm.energy_j);
        assert!((warm.packages[0].rapl_energy_j - warm.energy_j).abs() < 61.04e-6 * 3.0);
        for c in &warm.per_cpu {
            let total: f64 = c.time_in_freq.values().sum();
            assert!((total - 0.6).abs() < 1e-6, "cpu {}: {total}", c.cpu);
            assert!(c.busy_pct <= 100.0 + 1e-9);
        }
    }

    #[test]
    fn a_warm_up_past_the_end_is_an_error() {
        let cfg = dvfslab_sim::SimConfig {
            governor: "performance".into(),
            workload: "cpu-bound:warmup_ms=2000".into(),
            duration_ns: Some(1_000_000_000),
            ..Default::default()
        };
        let err = dvfslab_sim::simulate(&common::preset("pixel6"), "pixel6", &cfg).err().unwrap().to_string();
        assert!(err.contains("warmup_ms"), "{err}");
    }
}

mod background {
    use super::*;

    #[test]
    fn kernel_threads_wake_every_cpu_at_their_rate() {
        // 200 wake-ups a second of 50 µs at the 2.3 GHz base: ~37 µs at the 3.1 GHz the
        // performance policy runs, plus up to the 133 µs C6 exit that busy time counts: between
        // 0.7% and 3.4% of every CPU but the one the periodic thread also uses.
        let r = run("haswell-e5-2670v3-2s", "performance", "periodic:threads=1,kthread_hz=200,kthread_us=50", 2.0, 0);
        let mut busy: Vec<f64> = r.summary.per_cpu.iter().map(|c| c.busy_pct).collect();
        busy.sort_by(f64::total_cmp);
        assert!(busy[0] > 0.7, "a CPU the kernel threads never woke: {busy:?}");
        assert!(busy[busy.len() / 2] < 3.6, "{busy:?}");
        let idle = run("haswell-e5-2670v3-2s", "performance", "periodic:threads=1", 2.0, 0);
        let quiet: Vec<_> = idle.summary.per_cpu.iter().filter(|c| c.busy_pct < 0.01).collect();
        assert!(quiet.len() > 40, "without kernel threads most CPUs never wake");
    }

    #[test]
    fn a_fixed_work_run_ends_without_waiting_for_kernel_threads() {
        let plain = run("skylake-e3-1240v5", "performance", "gitsource:commands=100", 30.0, 0).summary;
        let busy = run("skylake-e3-1240v5", "performance", "gitsource:commands=100,kthread_hz=500", 30.0, 0).summary;
        assert!(plain.sim_time_s < 1.0, "{}", plain.sim_time_s);
        assert!(busy.sim_time_s < 2.0 * plain.sim_time_s, "{} vs {}", busy.sim_time_s, plain.sim_time_s);
    }

    #[test]
    fn no_kernel_threads_is_the_default_and_the_knob_is_checked() {
        let a = run("skylake-e3-1240v5", "schedutil", "tbench:clients=2", 0.1, 3).summary;
        let b = run("skylake-e3-1240v5", "schedutil", "tbench:clients=2,kthread_hz=0", 0.1, 3).summary;
        assert_eq!(a.metric.value, b.metric.value);
        assert_eq!(a.energy_j, b.energy_j);
        for bad in ["tbench:kthread_hz=-1", "tbench:kthread_us=0"] {
            let err = dvfslab_sim::workload::parse(bad).err().unwrap().to_string();
            assert!(err.contains("kthread_"), "{bad}: {err}");
        }
    }
}

mod variation {
    use super::*;
    use dvfslab_sim::result::RunJson;

    /// A run's summary as JSON, less what names the spec and seed or measures the host.
    fn figures(r: &RunJson) -> serde_json::Value {
        let mut v = serde_json::to_value(r).unwrap();
        let map = v.as_object_mut().unwrap();
        for key in ["workload", "seed", "wall_time_s"] {
            map.remove(key).expect("a field of the summary");
        }
        v
    }

    #[test]
    fn start_phases_and_work_jitter_at_zero_leave_a_run_as_it_was() {
        for base in ["tbench:clients=2", "periodic:threads=2", "pgbench:clients=3", "gitsource:commands=50"] {
            let plain = run("skylake-e3-1240v5", "schedutil", base, 0.1, 3).summary;
            let zero = format!("{base},phase_us=0,work_jitter_pct=0");
            let with = run("skylake-e3-1240v5", "schedutil", &zero, 0.1, 3).summary;
            assert_eq!(figures(&with), figures(&plain), "{base}");
        }
    }

    #[test]
    fn start_phases_and_work_jitter_tell_seeds_apart_and_repeat_per_seed() {
        let tbench = |spec: &str, seed| run("skylake-e3-1240v5", "schedutil", spec, 0.1, seed).summary;
        // Without them every seed of tbench runs the same copies of its programs.
        assert_eq!(figures(&tbench("tbench:clients=2", 1)), figures(&tbench("tbench:clients=2", 2)));
        for knobs in ["phase_us=1000", "work_jitter_pct=5", "phase_us=1000,work_jitter_pct=5"] {
            let spec = format!("tbench:clients=2,{knobs}");
            let (one, two) = (tbench(&spec, 1), tbench(&spec, 2));
            assert_ne!(one.metric.value, two.metric.value, "{knobs}");
            assert_eq!(figures(&tbench(&spec, 1)), figures(&one), "{knobs}");
        }
    }

    #[test]
    fn work_jitter_keeps_the_work_in_expectation() {
        // 2 threads × 200 activations of 2 ms at base frequency, each done within its period:
        // ±20% draws average within 2% (the mean of 400 draws has a 0.6% deviation).
        let work = |spec: &str| run("skylake-e3-1240v5", "performance", spec, 2.0, 5).summary.work_done_cycles;
        let plain = work("periodic:threads=2,run_us=2000,period_us=10000");
        let jittered = work("periodic:threads=2,run_us=2000,period_us=10000,work_jitter_pct=20");
        assert_ne!(jittered, plain);
        assert!((jittered / plain - 1.0).abs() < 0.02, "{jittered} against {plain} cycles");
    }

    #[test]
    fn a_start_phase_delays_a_task_by_less_than_the_phase() {
        // One always-running thread started within the first 100 ms of 200: it does between
        // half and all of the work it does from time zero.
        let work = |spec: &str| run("skylake-e3-1240v5", "performance", spec, 0.2, 7).summary.work_done_cycles;
        let ratio = work("cpu-bound:threads=1,phase_us=100000") / work("cpu-bound:threads=1");
        assert!(ratio > 0.5 && ratio < 1.0, "{ratio}");
    }
}

mod cpumask {
    use super::common::{quiet_preset, run_on};

    /// Busy % of each CPU of the 2-CPU guest (without its background tasks) running hackbench
    /// with `knobs`.
    fn busy(knobs: &str) -> Vec<f64> {
        let json = quiet_preset("kvm-guest-2cpu");
        let w = format!("hackbench:loops=50{knobs}");
        run_on(&json, "kvm", "performance", &w, 0.2, 1).summary.per_cpu.iter().map(|c| c.busy_pct).collect()
    }

    #[test]
    fn a_cpumask_keeps_the_workload_and_the_tasks_it_forks_on_its_cpus() {
        // hackbench's parent forks its 40 workers: unrestricted they use both CPUs; under
        // taskset's mask 2 (CPU 1) or 1 (CPU 0) only that CPU runs, as the workers inherit it.
        let free = busy("");
        assert!(free.iter().all(|&b| b > 20.0), "{free:?}");
        for (mask, cpu) in [(2, 1), (1, 0)] {
            let pinned = busy(&format!(",cpumask={mask}"));
            assert!(pinned[cpu] > 50.0 && pinned[1 - cpu] < 0.5, "cpumask={mask}: {pinned:?}");
        }
        assert_eq!(busy(",cpumask=3"), free);
    }

    #[test]
    fn a_cpumask_naming_no_cpu_of_the_platform_or_not_a_mask_is_refused() {
        let json = quiet_preset("kvm-guest-2cpu");
        for (bad, says) in [("cpumask=4", "beyond the platform's 2"), ("cpumask=1.5", "not a whole number")] {
            let cfg = dvfslab_sim::SimConfig {
                governor: "performance".into(),
                workload: format!("hackbench:{bad}"),
                ..dvfslab_sim::SimConfig::default()
            };
            let plat = dvfslab_sim::hw::platform::Platform::from_json(&json, "kvm").unwrap();
            let err = dvfslab_sim::Sim::new(plat, &cfg).err().expect(bad).to_string();
            assert!(err.contains("cpumask") && err.contains(says), "{bad}: {err}");
        }
    }
}

mod transitions {
    use super::common::preset;
    use dvfslab_sim::{simulate, SimConfig, SimResult};

    /// Schedutil following periodic bursts on Haswell-EP for 0.2 s, with a timeline, the
    /// preset's `frequency.<field>` set to `value`.
    fn bursts_with(field: &str, value: f64) -> SimResult {
        let mut doc: serde_json::Value = serde_json::from_str(&preset("haswell-e5-2670v3-2s")).unwrap();
        doc["clusters"][0]["frequency"][field] = value.into();
        let cfg = SimConfig {
            governor: "schedutil:invariant=1,kernel=5.2,driver=intel_cpufreq".into(),
            workload: "periodic:threads=4,run_us=3000,period_us=10000,jitter_pct=20".into(),
            duration_ns: Some(200_000_000),
            timeline: true,
            ..SimConfig::default()
        };
        simulate(&doc.to_string(), "haswell", &cfg).unwrap()
    }

    /// Every frequency change's time modulo the grid, with the request grid set to `grid_us`.
    fn change_phases_ns(grid_us: f64) -> Vec<u64> {
        let tl = bursts_with("request_grid_us", grid_us).timeline.unwrap();
        assert!(tl.freq_time_ns.len() > 20, "the bursts move the frequency ({} changes)", tl.freq_time_ns.len());
        tl.freq_time_ns.iter().filter(|&&t| t > 0).map(|&t| t % 500_000).collect()
    }

    /// Busy CPU-time (ns) and frequency changes with the halt per change set to `halt_us`.
    fn busy_ns_and_changes(halt_us: f64) -> (f64, usize) {
        let r = bursts_with("switch_halt_us", halt_us);
        let busy = r.summary.per_cpu.iter().map(|c| c.busy_pct / 100.0 * r.summary.sim_time_s * 1e9).sum();
        (busy, r.timeline.unwrap().freq_time_ns.len())
    }

    #[test]
    fn a_frequency_change_halts_the_busy_cores_of_its_domain() {
        // The bursts' work is fixed, so every halt that catches a burst lengthens it by up to
        // the halt; a change while the CPU idles costs nothing.
        let (free, _) = busy_ns_and_changes(0.0);
        let (halted, changes) = busy_ns_and_changes(200.0);
        let added = halted - free;
        assert!(added >= 200_000.0, "no change caught a burst: {added} ns more busy time");
        assert!(added <= changes as f64 * 200_000.0, "{added} ns from {changes} changes");
    }

    #[test]
    fn haswell_changes_frequency_on_its_500_us_grid() {
        // A request waits for the next 500-µs slot, then the 22.5-µs switch: every change lands
        // 22.5 µs after a slot (turbo-limit re-evaluations, on the same grid, land on it).
        let phases = change_phases_ns(500.0);
        assert!(phases.iter().all(|&p| p == 22_500 || p == 0), "{:?}", &phases[..phases.len().min(20)]);
        assert!(phases.contains(&22_500));
        // Without the grid, changes come 22.5 µs after each request, wherever that falls.
        let free = change_phases_ns(0.0);
        assert!(free.iter().any(|&p| p != 22_500 && p != 0), "{:?}", &free[..free.len().min(20)]);
    }
}

/// Defaults that follow the simulated kernel and the machine: acpi-cpufreq's latency and
/// cpuinfo.max_freq, frequency invariance per architecture, ondemand's io_is_busy.
mod kernel_defaults {
    use super::*;
    use dvfslab_sim::{simulate, SimConfig};

    /// Governor decisions in a short explained run.
    fn decisions(platform: &str, governor: &str, workload: &str, duration_s: f64) -> usize {
        common::explain(platform, governor, workload, duration_s).decisions.expect("explained").len()
    }

    /// acpi_cpufreq_cpu_init reports EPYC's _PSS latency, 0, so schedutil's rate limit is
    /// cpufreq_policy_transition_delay_us' 1 ms at 5.9 and 6.12, not the 10 ms and 6.44 s that
    /// CPUFREQ_ETERNAL would give (one decision per policy and run at 6.12).
    #[test]
    fn epyc_schedutil_rate_limit_defaults_to_1_ms_at_5_9_and_6_12() {
        let w = "periodic:threads=1,run_us=2000,period_us=4000,jitter_pct=50";
        for kernel in ["5.9", "6.12"] {
            let r = common::explain("epyc7742-2s", &format!("schedutil:kernel={kernel}"), w, 0.5);
            let log = r.decisions.expect("explained");
            let used: Vec<f64> = log.iter().map(|d| common::input(d, "rate_limit_us")).collect();
            assert!(!used.is_empty() && used.iter().all(|&v| v == 1000.0), "kernel {kernel}: {used:?}");
        }
        assert!(decisions("epyc7742-2s", "schedutil:kernel=6.12", w, 0.5) > 5);
    }

    /// powerpc has no arch_scale_freq_capacity: schedutil on POWER scales policy->cur and PELT
    /// is unscaled unless asked otherwise; invariant=1 is refused there.
    #[test]
    fn power_runs_without_frequency_invariance() {
        let w = "periodic:threads=4,run_us=2000,period_us=8000";
        let default = run("power8-powernv", "schedutil", w, 0.3, 1).summary;
        let off = run("power8-powernv", "schedutil:invariant=0", w, 0.3, 1).summary;
        assert_eq!(default.energy_j, off.energy_j);
        assert_eq!(default.metric.value, off.metric.value);
        let cfg = SimConfig {
            governor: "schedutil:invariant=1".into(),
            workload: w.into(),
            duration_ns: Some(100_000_000),
            ..SimConfig::default()
        };
        let err = match simulate(&common::preset("power8-powernv"), "power8-powernv", &cfg) {
            Ok(_) => panic!("invariant=1 was accepted on POWER"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("POWER"), "{err}");
    }

    /// x86 frequency invariance arrived in 5.7 (init_freq_invariance): a 5.6 run is the
    /// non-invariant one, a 5.7 run is not.
    #[test]
    fn intel_is_invariant_from_5_7() {
        let w = "periodic:threads=2,run_us=2000,period_us=8000";
        let energy = |g: &str| run("haswell-e5-2670v3-2s", g, w, 0.3, 1).summary.energy_j;
        assert_eq!(energy("schedutil:kernel=5.6"), energy("schedutil:kernel=5.6,invariant=0"));
        assert_ne!(energy("schedutil:kernel=5.7"), energy("schedutil:kernel=5.7,invariant=0"));
    }

    /// should_io_be_busy (cpufreq_ondemand.c): Haswell-EP (family 6, model 63) counts iowait
    /// as busy by default, so ondemand sees dbench's disk waits as load.
    #[test]
    fn ondemand_counts_io_wait_as_busy_on_intel_by_default() {
        let w = "dbench4:clients=2";
        let avg_khz = |g: &str| {
            let r = run("haswell-e5-2670v3-2s", g, w, 0.5, 0).summary;
            let busy: Vec<f64> = r.per_cpu.iter().filter(|c| c.busy_pct > 1.0).map(|c| c.avg_freq_khz).collect();
            busy.iter().sum::<f64>() / busy.len() as f64
        };
        let default = avg_khz("ondemand");
        let io_idle = avg_khz("ondemand:io_is_busy=0");
        assert_eq!(default, avg_khz("ondemand:io_is_busy=1"));
        assert!(default > io_idle, "io_is_busy default {default} kHz vs 0: {io_idle} kHz");
    }
}

mod dequeue_callback {
    fn decisions(
        platform: &str,
        governor: &str,
        workload: &str,
        duration_s: f64,
    ) -> Vec<dvfslab_sim::observe::Decision> {
        super::common::explain(platform, governor, workload, duration_s).decisions.unwrap()
    }

    #[test]
    fn a_sleep_is_seen_by_schedutil_while_its_cpu_is_still_busy() {
        // __schedule dequeues the sleeping task (dequeue_task -> cpufreq_update_util) before the
        // idle task runs and counts an idle call (tick_nohz_idle_stop_tick), so on a one-CPU
        // policy sugov_update_single finds the CPU busy (sugov_cpu_is_busy, 4.12-6.x) and keeps
        // its frequency. 6 ms of work every 20 ms with acpi-cpufreq per-CPU policies at 5.9
        // (rate limit 10 ms): the policy settles in about ten decisions a second. Counting the
        // idle call first dropped the frequency at every sleep: 54 decisions, 3.3 % slower.
        let d = decisions(
            "skylake-e3-1240v5",
            "schedutil:kernel=5.9,driver=acpi-cpufreq",
            "periodic:threads=1,run_us=6000,period_us=20000",
            1.0,
        );
        assert!(d.len() <= 15, "{} decisions", d.len());
    }
}

mod migration {
    use super::common::{explain, input};

    #[test]
    fn a_migrating_task_takes_its_runnable_and_load_averages_along() {
        // detach_entity_load_avg / attach_entity_load_avg (kernel/sched/fair.c) move a task's
        // util, runnable and load sums between run-queues. A run-queue's runnable_avg counts
        // every runnable task and its util_avg only the running one, so runnable_avg >= util_avg
        // holds on each CPU as long as both move together. Six periodic tasks on 8 CPUs migrate
        // at wake-up; schedutil reads both signals (sugov_get_util). Moving util alone left
        // runnable_avg up to 512 below util_avg at every one of the 42 decisions.
        let r = explain(
            "skylake-e3-1240v5",
            "schedutil:kernel=6.18,driver=acpi-cpufreq",
            "periodic:threads=6,run_us=3000,period_us=10000",
            0.3,
        );
        let decisions = r.decisions.unwrap();
        assert!(decisions.len() > 10);
        for d in &decisions {
            // Truncation of the averages may leave them a unit or two apart.
            let (runnable, util) = (input(d, "runnable_avg"), input(d, "util_avg"));
            assert!(runnable + 2.0 >= util, "at {} ns: runnable_avg {runnable} < util_avg {util}", d.time_ns);
        }
    }
}
