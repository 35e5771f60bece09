//! schedutil in whole simulations: the behaviours the x86 invariance work is about.

use crate::common;

use common::{explain, input};
use dvfslab_sim::SimResult;

#[test]
fn four_core_reference_keeps_all_core_turbo_below_1024() {
    // 24 threads busy 99% of the time, one per core: the all-core bin is 2.6 GHz, below the
    // 4C turbo reference of 2.8 GHz, so freq_scale stays at 2600/2800 · 1024 = 950 and util_avg
    // cannot reach 1024 (the known limitation). With the reference at the all-core bin itself
    // (12c) the same load reads almost 1024. (A CPU that never idles at all would still reach
    // 1024: only idle time converts the PELT clock's lag into idle, as in the kernel.)
    // The periodic workload keeps an absolute release grid: a thread delayed while the threads
    // spread at start runs back to back afterwards, never idles, and reaches 1024. The typical
    // (median) busy CPU is the one that idles a little every period.
    let w = "periodic:threads=24,run_us=20000,period_us=18000";
    let util_max = |gov: &str| {
        let r = common::run("haswell-e5-2670v3-2s", gov, w, 3.0, 0);
        let mut busy: Vec<_> = r.summary.per_cpu.iter().filter(|c| c.busy_pct > 90.0).map(|c| c.util_avg_max).collect();
        assert_eq!(busy.len(), 24, "{gov}");
        busy.sort_unstable();
        busy[busy.len() / 2]
    };
    let four = util_max("performance:freq_max=4c");
    let all = util_max("performance:freq_max=12c");
    assert!(four <= 960, "{four}");
    assert!(all >= 1000, "{all}");
}

#[test]
fn invariant_jumps_where_non_invariant_creeps() {
    // A task that starts on an idle CPU running at the minimum: non-invariant schedutil asks
    // for 1.25 × cur × util and climbs one step per update, invariant schedutil asks for
    // 1.25 × max × util at once.
    let w = "periodic:threads=1,run_us=30000,period_us=200000";
    let inv = explain("haswell-e5-2670v3-2s", "schedutil:kernel=5.9", w, 0.02);
    let non = explain("haswell-e5-2670v3-2s", "schedutil:invariant=0,kernel=5.9", w, 0.02);
    let first_inv = &inv.decisions.as_ref().unwrap()[0];
    let first_non = &non.decisions.as_ref().unwrap()[0];
    // Invariant: ref = cpuinfo.max (3.1 GHz turbo); raw = 1.25 · ref · util / 1024.
    let util = input(first_inv, "util");
    let expect = (3_100_000.0f64 + (3_100_000 >> 2) as f64) * util / 1024.0;
    assert!((first_inv.raw_khz as f64 - expect).abs() <= 1.0, "{} vs {expect}", first_inv.raw_khz);
    assert_eq!(input(first_inv, "ref_khz"), 3_100_000.0);
    // Non-invariant: ref = the current (minimum) frequency.
    assert_eq!(input(first_non, "ref_khz"), 1_200_000.0);
    assert!(first_inv.resolved_khz > first_non.resolved_khz);
    // Within 20 ms the invariant policy is at a high frequency; the non-invariant one is
    // still climbing step by step.
    let top = |r: &SimResult| r.decisions.as_ref().unwrap().iter().map(|d| d.resolved_khz).max().unwrap();
    assert!(top(&inv) >= 2_000_000, "{}", top(&inv));
    assert!(top(&non) < top(&inv));
    let steps: Vec<u32> = non.decisions.as_ref().unwrap().iter().map(|d| d.resolved_khz).collect();
    assert!(steps.windows(2).all(|w| w[1] as f64 <= w[0] as f64 * 1.25 + 100_000.0), "{steps:?}");
}

#[test]
fn rate_limit_spaces_frequency_changes() {
    let r = explain(
        "pixel6",
        "schedutil:rate_limit_us=20000",
        "periodic:threads=3,run_us=4000,period_us=7000,jitter_pct=50",
        1.0,
    );
    let log = r.decisions.unwrap();
    for pol in 0..3 {
        let times: Vec<u64> = log.iter().filter(|d| d.policy == pol).map(|d| d.time_ns).collect();
        assert!(times.windows(2).all(|w| w[1] - w[0] >= 20_000_000), "policy {pol}: {times:?}");
    }
}

#[test]
fn resolved_frequencies_are_table_entries_within_limits() {
    let r = explain("juno-r2", "schedutil", "periodic:threads=4,run_us=2000,period_us=6000,jitter_pct=40", 1.0);
    let log = r.decisions.unwrap();
    assert!(!log.is_empty());
    for d in &log {
        assert!(d.resolved_khz >= d.min_khz && d.resolved_khz <= d.max_khz);
        assert!([600_000, 1_000_000, 1_200_000, 450_000, 800_000, 950_000].contains(&d.resolved_khz));
    }
}

/// Decisions of one policy, in time order.
fn of_policy(r: &SimResult, policy: usize) -> Vec<&dvfslab_sim::observe::Decision> {
    r.decisions.as_ref().unwrap().iter().filter(|d| d.policy == policy).collect()
}

/// Two threads per CPU, overlapping: a task leaves while the other keeps the CPU busy, so the
/// utilisation falls on a CPU that has not been idle.
const OVERLAP: &str = "periodic:threads=12,run_us=4000,period_us=10000,jitter_pct=90";

/// How many times each policy's frequency went down, summed over the policies.
fn steps_down(r: &SimResult) -> usize {
    let policies = r.decisions.as_ref().unwrap().iter().map(|d| d.policy).max().unwrap_or(0) + 1;
    (0..policies).map(|p| of_policy(r, p).windows(2).filter(|w| w[1].resolved_khz < w[0].resolved_khz).count()).sum()
}

#[test]
fn busy_hold_from_4_12() {
    // sugov_cpu_is_busy (cpufreq_schedutil.c) came in 4.12: before it a single-CPU policy
    // lowers its frequency even when the CPU never idled since the last evaluation. The other
    // 4.12 change, the rate limit counted from changes only (sugov_update_commit), is taken out
    // with rate_limit_us=0, so the held decreases are the difference (a held evaluation commits
    // nothing, hence no decision to look at directly).
    let run = |kernel: &str| {
        explain("skylake-e3-1240v5", &format!("schedutil:kernel={kernel},rate_limit_us=0"), OVERLAP, 1.0)
    };
    let (old, new) = (run("4.11"), run("4.12"));
    assert!(steps_down(&old) > steps_down(&new), "{} vs {}", steps_down(&old), steps_down(&new));
}

#[test]
fn util_est_enters_the_signal_in_4_17() {
    // util_est (sched/fair.c, cpu_util_cfs) is 4.17's: a 4.16 schedutil reads util_avg alone.
    let w = "periodic:threads=4,run_us=3000,period_us=12000,jitter_pct=40";
    let ests = |kernel: &str| -> Vec<f64> {
        let r = explain("juno-r2", &format!("schedutil:kernel={kernel}"), w, 0.5);
        r.decisions.unwrap().iter().map(|d| input(d, "util_est")).collect()
    };
    let old = ests("4.16");
    assert!(!old.is_empty() && old.iter().all(|&e| e == 0.0), "{old:?}");
    assert!(ests("4.17").iter().any(|&e| e > 0.0));
}

#[test]
fn runnable_boost_counts_even_when_the_cpu_emptied() {
    // cpu_util_cfs_boost = cpu_util(cpu, NULL, -1, 1), 6.5+: max(util_avg, runnable_avg, util_est)
    // with no condition on nr_running, so the callback of the last task leaving still sees the
    // contention it had.
    let w = "periodic:threads=16,run_us=2000,period_us=8000,jitter_pct=80";
    let r = explain("skylake-e3-1240v5", "schedutil:kernel=6.18", w, 1.0);
    let log = r.decisions.unwrap();
    assert!(log.iter().any(|d| input(d, "runnable_avg") > input(d, "util_avg").max(input(d, "util_est"))));
    for d in &log {
        let runnable = input(d, "runnable_avg").min(input(d, "capacity"));
        assert!(input(d, "util") >= runnable, "t={} util {} < runnable {runnable}", d.time_ns, input(d, "util"));
    }
}

#[test]
fn intel_cpufreq_commits_every_raw_change() {
    // intel_cpufreq has no target_index, so cpufreq_driver_resolve_freq hands schedutil the
    // clamped kHz: every change of the raw request is a new next_freq (and restarts the rate
    // limit), even where intel_cpufreq_fast_switch rounds it up to the same P-state.
    // acpi-cpufreq resolves to its table first: consecutive commits always differ there.
    let w = "periodic:threads=6,run_us=3000,period_us=10000,jitter_pct=60";
    let repeats = |driver: &str| {
        let r = explain("haswell-e5-2670v3-2s", &format!("schedutil:driver={driver}"), w, 0.5);
        let n = r.summary.per_cpu.len();
        let mut repeats = 0;
        for pol in 0..n {
            let log = of_policy(&r, pol);
            repeats += log.windows(2).filter(|p| p[0].resolved_khz == p[1].resolved_khz).count();
            assert!(log.iter().all(|d| d.resolved_khz % 100_000 == 0), "{driver}: P-states are 100 MHz ratios");
        }
        repeats
    };
    assert!(repeats("intel_cpufreq") > 0);
    assert_eq!(repeats("acpi-cpufreq"), 0);
}

/// Per-policy tunables reach each policy's governor: on pixel6 (policies 0, 4, 6) only the
/// middle cluster's schedutil runs with the rate limit set for policy4; the one given to a
/// CPU where no policy starts is refused with the platform's policies named.
#[test]
fn a_rate_limit_set_for_one_policy_applies_to_that_policy_only() {
    let r = explain("pixel6", "schedutil:rate_limit_us=3000,policy4.rate_limit_us=7000", "cpu-bound:threads=8", 0.05);
    let decisions = r.decisions.expect("explained");
    let limit_of = |policy: usize| {
        let limits: Vec<f64> =
            decisions.iter().filter(|d| d.policy == policy).map(|d| input(d, "rate_limit_us")).collect();
        assert!(!limits.is_empty(), "policy {policy} decided nothing");
        assert!(limits.windows(2).all(|w| w[0] == w[1]));
        limits[0]
    };
    assert_eq!((limit_of(0), limit_of(1), limit_of(2)), (3000.0, 7000.0, 3000.0));
    let cfg = dvfslab_sim::SimConfig {
        governor: "schedutil:policy5.rate_limit_us=1000".into(),
        workload: "cpu-bound".into(),
        duration_ns: Some(1_000_000),
        ..dvfslab_sim::SimConfig::default()
    };
    let Err(err) = dvfslab_sim::simulate(&common::preset("pixel6"), "pixel6", &cfg) else { panic!("policy5 accepted") };
    let err = err.to_string();
    assert!(
        err.contains("policy5: no cpufreq policy starts at CPU 5 on pixel6 (its policies: policy0, policy4, policy6)"),
        "{err}"
    );
}

/// What a governor outside the registry reads of its policy beyond the per-CPU signals: the
/// run-queue's tasks, the energy and time in state so far, the other policies. Reading them
/// changes nothing in the run: schedutil with a reader beside it on a timer ends with the same
/// energy, to the bit, as schedutil alone.
#[test]
fn a_governor_reads_tasks_energy_and_time_in_state_without_changing_the_run() {
    use dvfslab_sim::governor::{Governor, GovernorConfig, PolicyCtx, UpdateFlags};
    use dvfslab_sim::hw::platform::Platform;
    use dvfslab_sim::{Sim, SimConfig};

    /// schedutil, and every 3 ms a look at everything else, checked on the spot.
    struct Reader {
        inner: Box<dyn Governor>,
        last_energy_j: f64,
        looks: std::rc::Rc<std::cell::Cell<u32>>,
    }
    impl Governor for Reader {
        fn start(&mut self, ctx: &mut dyn PolicyCtx) {
            self.inner.start(ctx);
            ctx.arm_timer(3_000_000);
        }
        fn wants_util_updates(&self) -> bool {
            true
        }
        fn util_update(&mut self, ctx: &mut dyn PolicyCtx, cpu: usize, flags: UpdateFlags) {
            self.inner.util_update(ctx, cpu, flags);
        }
        fn dvfs_headroom(&self, actual: u64, cap: u64) -> Option<u64> {
            self.inner.dvfs_headroom(actual, cap)
        }
        fn timer(&mut self, ctx: &mut dyn PolicyCtx) {
            let now = ctx.now_ns();
            let in_state: u64 = ctx.time_in_state_ns().iter().map(|(_, ns)| ns).sum();
            assert_eq!(in_state, now);
            assert!(ctx.time_in_state_ns().iter().all(|(khz, _)| ctx.table_khz().contains(khz)));
            let energy = ctx.energy_so_far_j().expect("a live run knows its energy");
            assert!(energy >= self.last_energy_j);
            self.last_energy_j = energy;
            for &cpu in ctx.cpus() {
                let tasks = ctx.cpu_tasks(cpu);
                assert_eq!(tasks.len() as u64, ctx.cpu_nr_running(cpu));
                assert_eq!(tasks.iter().map(|t| t.util_est).sum::<u64>(), ctx.cpu_signals(cpu).util_est);
                assert!(tasks.iter().skip(1).all(|t| !t.running));
            }
            assert_eq!(ctx.policy_cur_khz(ctx.facts().index()), Some(ctx.cur_khz()));
            self.looks.set(self.looks.get() + 1);
            ctx.arm_timer(3_000_000);
        }
    }

    let (json, w) = (common::preset("pixel6"), "periodic:threads=4");
    let cfg = SimConfig::new("schedutil", w).duration_ns(Some(300_000_000));
    let plain = Sim::new(Platform::from_json(&json, "pixel6").unwrap(), &cfg).unwrap().run().unwrap();
    let mut sim = Sim::new(Platform::from_json(&json, "pixel6").unwrap(), &cfg).unwrap();
    let looks = std::rc::Rc::new(std::cell::Cell::new(0));
    let (gov_cfg, info) = GovernorConfig::parse("schedutil").unwrap();
    sim.replace_governors("schedutil", |_| {
        Box::new(Reader { inner: (info.build)(&gov_cfg.values), last_energy_j: 0.0, looks: looks.clone() })
    });
    let read = sim.run().unwrap();
    // Three policies, each looking at 3, 6, ... 297 ms: the run ends at 300 ms first.
    assert_eq!(looks.get(), 3 * 99);
    assert_eq!(read.summary.energy_j.to_bits(), plain.summary.energy_j.to_bits());
}

/// intel_cpufreq asks to be called after every limits update (CPUFREQ_NEED_UPDATE_LIMITS):
/// 5.10 – 6.13 re-read that flag into the pending update once it is used, so schedutil calls
/// the driver at every evaluation, repeating the same frequency; 6.14 clears it once used.
/// acpi-cpufreq has no such flag. While one is pending, 6.6 – 6.13 keep no busy hold (and the
/// stable updates that took the rule: 6.1.60, 6.5.9), 5.10 – 6.5 still do.
#[test]
fn intel_cpufreq_is_called_at_every_evaluation_from_5_10_to_6_13() {
    let w = "periodic:threads=4,run_us=3000,period_us=10000";
    let requests = |gov: &str| explain("skylake-e3-1240v5", gov, w, 1.0).decisions.expect("explain").len();
    let (k5_9, k5_10, k6_13, k6_14) = (
        requests("schedutil:kernel=5.9,driver=intel_cpufreq"),
        requests("schedutil:kernel=5.10,driver=intel_cpufreq"),
        requests("schedutil:kernel=6.13,driver=intel_cpufreq"),
        requests("schedutil:kernel=6.14,driver=intel_cpufreq"),
    );
    assert!(k5_10 > 10 * k5_9, "{k5_9} {k5_10}");
    assert!(k6_13 > 10 * k6_14, "{k6_13} {k6_14}");
    let acpi = requests("schedutil:kernel=6.13,driver=acpi-cpufreq");
    assert!(k6_13 > 10 * acpi, "{k6_13} {acpi}");
    // With a request pending at every evaluation, 6.7+ never holds a busy CPU's frequency.
    let held = |gov: &str| {
        let r = explain("skylake-e3-1240v5", gov, w, 1.0);
        r.decisions.expect("explain").iter().filter(|d| input(d, "held_busy") == 1.0).count()
    };
    assert!(held("schedutil:kernel=6.5,driver=intel_cpufreq") > 0);
    assert_eq!(held("schedutil:kernel=6.6,driver=intel_cpufreq"), 0);
    assert!(held("schedutil:kernel=6.1.59,driver=intel_cpufreq") > 0);
    assert_eq!(held("schedutil:kernel=6.1.60,driver=intel_cpufreq"), 0);
    // The stable updates that took 6.14's rule clear it too (read in Debian's 6.1.192 and
    // 6.12.118 sources; first updates from the stable review postings).
    for (before, from) in [("6.1.128", "6.1.129"), ("6.12.12", "6.12.13"), ("5.15.178", "5.15.179")] {
        let (old, new) = (
            requests(&format!("schedutil:kernel={before},driver=intel_cpufreq")),
            requests(&format!("schedutil:kernel={from},driver=intel_cpufreq")),
        );
        assert!(old > 10 * new, "{before} {old}, {from} {new}");
    }
}
