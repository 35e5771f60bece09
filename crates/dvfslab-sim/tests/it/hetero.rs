//! Heterogeneous platforms: fits rules, misfit migration, overutilized and EAS placement, the
//! Energy Model, uclamp in frequency selection and placement, response_time_ms defaults.

use crate::common;

use std::rc::Rc;

use dvfslab_sim::hw::platform::Platform;
use dvfslab_sim::observe::{Decision, Migration};
use dvfslab_sim::sched::task::{Amount, Op};
use dvfslab_sim::workload::{Better, Metric, RunStats, TaskSpec, Workload};
use dvfslab_sim::{Sim, SimConfig, SimResult};

const MS: u64 = 1_000_000;
/// Pixel 6 CPUs by cluster: little 0-3 (capacity 160), mid 4-5 (498), big 6-7 (1024).
const LITTLE: std::ops::Range<usize> = 0..4;
const MID: std::ops::Range<usize> = 4..6;
const BIG: std::ops::Range<usize> = 6..8;

fn cluster(cpu: usize) -> &'static str {
    if LITTLE.contains(&cpu) {
        "little"
    } else if MID.contains(&cpu) {
        "mid"
    } else {
        "big"
    }
}

/// A workload given as task specs.
struct Tasks {
    tasks: Vec<TaskSpec>,
    duration_ns: u64,
}

impl Workload for Tasks {
    fn tasks(&self, _: &Platform) -> Vec<TaskSpec> {
        self.tasks.clone()
    }
    fn default_duration_ns(&self) -> u64 {
        self.duration_ns
    }
    fn metric(&self, _: &RunStats) -> Metric {
        Metric { name: "none".into(), value: 0.0, unit: "".into(), better: Better::Higher }
    }
}

fn run_tasks(platform: &str, governor: &str, tasks: Vec<TaskSpec>, duration_ns: u64) -> SimResult {
    let plat = Platform::from_json(&common::preset(platform), platform).unwrap();
    let cfg = SimConfig { governor: governor.into(), explain: true, ..SimConfig::default() };
    let w = Tasks { tasks, duration_ns };
    Sim::with_workload(plat, &cfg, Box::new(w), "test".into()).unwrap().run().unwrap()
}

/// Cycles (counted at base frequency, 1024-capacity µarch) that make `util` of demand in a
/// `period_ns` period on Pixel 6, whose biggest CPU runs 2.802 cycles per ns at its maximum.
fn cycles_for_util(util: f64, period_ns: u64) -> f64 {
    util / 1024.0 * period_ns as f64 * 2.802
}

/// A periodic task (16 ms period) whose demand ramps linearly from `from` to `to` util.
fn ramp(from: f64, to: f64, steps: usize) -> TaskSpec {
    let period_ns = 16 * MS;
    let mut prog = Vec::new();
    for i in 0..steps {
        let u = from + (to - from) * i as f64 / (steps - 1) as f64;
        prog.push(Op::Run { cycles: Amount::Fixed(cycles_for_util(u, period_ns)), mem_frac: 0.0 });
        prog.push(Op::WaitPeriod { period_ns });
    }
    prog.push(Op::Exit);
    TaskSpec::new("ramp", Rc::from(prog))
}

/// A task that never sleeps.
fn hog() -> TaskSpec {
    TaskSpec::new("hog", Rc::from(vec![Op::Run { cycles: Amount::Fixed(1e12), mem_frac: 0.0 }, Op::Jump { to: 0 }]))
}

/// A task running `util` of demand every 16 ms.
fn periodic(name: &str, util: f64) -> TaskSpec {
    let period_ns = 16 * MS;
    let prog = vec![
        Op::Run { cycles: Amount::Fixed(cycles_for_util(util, period_ns)), mem_frac: 0.0 },
        Op::WaitPeriod { period_ns },
        Op::Jump { to: 0 },
    ];
    TaskSpec::new(name, Rc::from(prog))
}

/// Moves between clusters, in order.
fn cluster_moves(migrations: &[Migration]) -> Vec<&Migration> {
    migrations.iter().filter(|m| cluster(m.src_cpu) != cluster(m.dst_cpu)).collect()
}

fn input(d: &Decision, name: &str) -> Option<f64> {
    d.inputs.iter().find(|(k, _)| *k == name).map(|&(_, v)| v)
}

mod misfit {
    use super::*;

    /// Checks that a growing task goes little → mid → big, each move only once its util no
    /// longer fits the CPU it leaves, and returns the util at each move.
    fn climbs(governor: &str, task: TaskSpec, duration_ns: u64) -> Vec<u64> {
        let r = run_tasks("pixel6", governor, vec![task], duration_ns);
        let log = r.migrations.unwrap();
        let moves = cluster_moves(&log);
        let path: Vec<(&str, &str)> = moves.iter().map(|m| (cluster(m.src_cpu), cluster(m.dst_cpu))).collect();
        assert_eq!(path, [("little", "mid"), ("mid", "big")], "{governor}: {log:?}");
        for m in &moves {
            assert!(!m.fitted_src, "{governor}: moved while it still fitted: {m:?}");
        }
        // It started on a little CPU and never left its cluster before the first move.
        let first = moves[0].time_ns;
        assert!(log.iter().filter(|m| m.time_ns < first).all(|m| LITTLE.contains(&m.dst_cpu)), "{log:?}");
        moves.iter().map(|m| m.util).collect()
    }

    #[test]
    fn a_growing_periodic_task_moves_up_once_it_stops_fitting() {
        // 20 → 900 util over 4 s. With the 80 % margin the little CPU (160) holds util ≤ 127
        // and the mid one (498) util ≤ 398.
        let utils = climbs("schedutil:eas=0", ramp(20.0, 900.0, 250), 4000 * MS);
        assert!((128..128 + 16).contains(&utils[0]), "{utils:?}");
        assert!((399..399 + 40).contains(&utils[1]), "{utils:?}");
    }

    #[test]
    fn the_tick_rule_moves_it_at_the_series_thresholds() {
        // fits=tick at HZ=250: the little CPU holds util ≤ 83, the mid one ≤ 451 (4 ms of growth).
        let little = dvfslab_sim::sched::capacity::FitsRule::new(1, 4 * MS, 0);
        let largest =
            |cap: u64| (0..=1024).filter(|&u| dvfslab_sim::sched::capacity::fits_capacity(u, cap, little)).max();
        assert_eq!((largest(160), largest(498)), (Some(83), Some(451)));
        let utils = climbs("schedutil:eas=0,fits=tick", ramp(20.0, 900.0, 250), 4000 * MS);
        assert!((84..84 + 16).contains(&utils[0]), "{utils:?}");
        assert!((452..452 + 40).contains(&utils[1]), "{utils:?}");
        // At HZ=1000 a tick is 1 ms: the little CPU holds util ≤ 141.
        let utils = climbs("schedutil:eas=0,fits=tick,hz=1000", ramp(20.0, 900.0, 250), 4000 * MS);
        assert!((142..142 + 16).contains(&utils[0]), "{utils:?}");
    }

    #[test]
    fn a_hog_is_pulled_up_at_the_tick_of_its_cpu() {
        // Never sleeping, its util climbs wherever it runs: the misfit check at the tick moves
        // it, a tick after it crossed the threshold.
        let r = run_tasks("pixel6", "schedutil", vec![hog()], 1000 * MS);
        let log = r.migrations.unwrap();
        let moves = cluster_moves(&log);
        let path: Vec<(&str, &str, &str)> =
            moves.iter().map(|m| (cluster(m.src_cpu), cluster(m.dst_cpu), m.reason)).collect();
        assert_eq!(path, [("little", "mid", "misfit"), ("mid", "big", "misfit")], "{log:?}");
        assert!(moves.iter().all(|m| !m.fitted_src), "{log:?}");
        assert!(moves[0].util >= 128 && moves[0].util < 128 + 32, "{log:?}");
        assert!(moves[1].util >= 399 && moves[1].util < 399 + 32, "{log:?}");
        // On the biggest CPU there is nothing bigger: it stays.
        assert_eq!(log.last().unwrap().dst_cpu, moves[1].dst_cpu);
        let busy: Vec<f64> = r.summary.per_cpu.iter().map(|c| c.busy_pct).collect();
        assert!(busy[moves[1].dst_cpu] > 80.0, "{busy:?}");
    }

    #[test]
    fn a_capped_or_pinned_hog_stays_on_its_little_cpu() {
        // uclamp_max 150 ≤ the little capacity: it fits there whatever its util.
        let r = run_tasks("pixel6", "schedutil", vec![hog().uclamp(None, Some(150))], 500 * MS);
        assert!(r.migrations.unwrap().is_empty());
        // Fork placement starts it on a little CPU (the one after the forking CPU 0).
        assert!(r.summary.per_cpu[LITTLE].iter().any(|c| c.busy_pct > 99.0));
        // Pinned to a little CPU: misfit, but nowhere else to go.
        let r = run_tasks("pixel6", "schedutil", vec![hog().pinned(vec![1])], 500 * MS);
        assert!(r.migrations.unwrap().is_empty());
        assert!(r.summary.per_cpu[1].busy_pct > 99.0);
    }
}

mod eas {
    use super::*;

    #[test]
    fn energy_aware_placement_saves_energy_on_a_light_load() {
        // Eight light periodic threads start spread over every cluster by fork balancing;
        // without EAS each stays where it started (its CPU is idle and it fits), with EAS they
        // gather where the Energy Model says work is cheapest. Juno runs 6.4: from 6.5 on,
        // runnable boosting raises the LITTLE cluster's OPP for the threads that now share a
        // CPU and wake together, and the saving is gone (about +7% there).
        let w = "periodic:threads=8,run_us=300,period_us=16000";
        for (platform, kernel, at_most) in
            [("pixel6", "6.18", 0.93), ("hikey960", "6.18", 0.6), ("juno-r2", "6.4", 0.95)]
        {
            let eas = common::run(platform, &format!("schedutil:kernel={kernel}"), w, 2.0, 1).summary;
            let off = common::run(platform, &format!("schedutil:kernel={kernel},eas=0"), w, 2.0, 1).summary;
            let ratio = eas.energy_j / off.energy_j;
            assert!(ratio < at_most, "{platform}: {} J with EAS, {} J without", eas.energy_j, off.energy_j);
            // The same work got done.
            let done = eas.work_done_cycles / off.work_done_cycles;
            assert!((done - 1.0).abs() < 0.01, "{platform}: work {done}");
        }
    }

    #[test]
    fn eas_runs_only_with_schedutil_on_asymmetric_platforms() {
        let reasons = |platform: &str, governor: &str| -> Vec<&'static str> {
            let cfg = SimConfig {
                governor: governor.into(),
                workload: "periodic:threads=6,run_us=500,period_us=8000".into(),
                duration_ns: Some(300 * MS),
                explain: true,
                ..SimConfig::default()
            };
            let r = dvfslab_sim::simulate(&common::preset(platform), platform, &cfg).unwrap();
            r.migrations.unwrap().iter().map(|m| m.reason).collect()
        };
        assert!(reasons("pixel6", "schedutil").contains(&"eas"));
        for (platform, governor) in [
            ("pixel6", "performance"),
            ("pixel6", "schedutil:eas=0"),
            ("pixel6", "schedutil:invariant=0"),
            ("pixel6", "schedutil:kernel=4.19"),
            ("skylake-e3-1240v5", "schedutil"),
        ] {
            let r = reasons(platform, governor);
            assert!(!r.contains(&"eas"), "{platform} {governor}: {r:?}");
        }
        // Symmetric platforms know no misfit either.
        let r = reasons("skylake-e3-1240v5", "performance");
        assert!(r.iter().all(|&x| x != "misfit" && x != "misfit_idle"), "{r:?}");
    }

    #[test]
    fn a_task_that_does_not_fit_the_biggest_cpu_makes_the_system_overutilized() {
        // With the 80 % margin a hog on the big CPU (util → 1024 > 819) never fits, so
        // EAS stays off and a light task's wake-ups take the usual path. With the tick rule the
        // biggest CPU always fits (1024 at HZ=250) and EAS keeps placing the light task.
        let light = || periodic("light", 40.0).start_at(300 * MS);
        let reasons = |governor: &str| -> Vec<&'static str> {
            let r = run_tasks("pixel6", governor, vec![hog().pinned(vec![7]), light()], 1000 * MS);
            let log = r.migrations.unwrap();
            log.iter().filter(|m| m.task == 1).map(|m| m.reason).collect()
        };
        let pct80 = reasons("schedutil");
        assert!(!pct80.contains(&"eas"), "{pct80:?}");
        let tick = reasons("schedutil:fits=tick");
        assert!(tick.contains(&"eas"), "{tick:?}");
    }

    #[test]
    fn a_boosted_task_goes_where_its_uclamp_min_can_be_served() {
        // uclamp_min 600 is above the little (160) and mid (498) capacities: util_fits_cpu
        // says −1 there and 1 on a big CPU. Forked onto a little CPU (fork placement does not
        // look at capacity), its runs are too short for a tick to see it: its first wake-up
        // moves it, by EAS or by the capacity-aware wake-up path.
        for (governor, reason) in [("schedutil", "eas"), ("schedutil:eas=0", "wakeup")] {
            let r = run_tasks("pixel6", governor, vec![periodic("boosted", 2.0).uclamp(Some(600), None)], 500 * MS);
            let log = r.migrations.unwrap();
            let first = log.first().unwrap_or_else(|| panic!("{governor}: never moved"));
            assert_eq!((first.time_ns, first.reason), (16 * MS, reason), "{governor}: {log:?}");
            assert!(LITTLE.contains(&first.src_cpu), "{governor}: {log:?}");
            assert!(!first.fitted_src && BIG.contains(&first.dst_cpu), "{governor}: {log:?}");
            let busy: Vec<f64> = r.summary.per_cpu.iter().map(|c| c.busy_pct).collect();
            let on_big: f64 = busy[BIG].iter().sum();
            let elsewhere: f64 = busy[..6].iter().sum();
            assert!(on_big > 5.0 * elsewhere, "{governor}: {busy:?}");
        }
    }
}

mod uclamp {
    use super::*;

    /// The frequencies schedutil chose for the big policy (2) from `after_ns` on.
    fn big_requests(governor: &str, task: TaskSpec, after_ns: u64) -> Vec<Decision> {
        let r = run_tasks("pixel6", governor, vec![task], 600 * MS);
        r.decisions.unwrap().into_iter().filter(|d| d.policy == 2 && d.time_ns >= after_ns).collect()
    }

    #[test]
    fn uclamp_min_raises_the_frequency_of_a_small_task() {
        // A new task starts with half the CPU's spare capacity as util (512 here) and its
        // util_est takes a few hundred ms to come down; then util 30 asks for the lowest OPP.
        let small = || periodic("small", 30.0).pinned(vec![6]);
        let plain = big_requests("schedutil", small(), 0);
        assert_eq!(plain.last().unwrap().resolved_khz, 500_000, "{plain:?}");
        assert!(plain.iter().filter(|d| d.time_ns > 300 * MS).all(|d| d.resolved_khz == 500_000), "{plain:?}");
        // A floor of 512 asks for 2802 MHz · 512/1024 = 1401 MHz or more, from the start.
        // While it is runnable (an idle run-queue has no floor, uclamp_rq_util_with).
        let boosted = big_requests("schedutil", small().uclamp(Some(512), None), 0);
        let runnable: Vec<&Decision> = boosted.iter().filter(|d| input(d, "uclamp_min") == Some(512.0)).collect();
        assert!(runnable.len() >= 10 && runnable.iter().all(|d| d.resolved_khz >= 1_426_000), "{boosted:?}");
        assert!(boosted.iter().all(|d| input(d, "uclamp_min").is_some()), "{boosted:?}");
        assert!(plain.iter().all(|d| input(d, "uclamp_min").is_none()));
    }

    #[test]
    fn uclamp_max_caps_the_frequency_of_a_big_task() {
        let plain = big_requests("schedutil", hog().pinned(vec![6]), 0);
        let capped = big_requests("schedutil", hog().pinned(vec![6]).uclamp(None, Some(300)), 0);
        assert!(plain.iter().any(|d| d.resolved_khz == 2_802_000), "{plain:?}");
        // ≥ 6.8: perf ≤ 300 → 2802 MHz · 300/1024 = 820 898 kHz → 851 MHz.
        assert!(!capped.is_empty() && capped.iter().all(|d| d.resolved_khz <= 851_000), "{capped:?}");
        assert!(capped.iter().any(|d| d.resolved_khz == 851_000), "{capped:?}");
        // ≤ 6.7 the clamp applies to util and the 1.25 headroom to the frequency after it:
        // 1.25 · 2802 MHz · 300/1024 = 1 026 123 kHz → 1106 MHz.
        let old = big_requests("schedutil:kernel=6.1", hog().pinned(vec![6]).uclamp(None, Some(300)), 0);
        assert!(old.iter().all(|d| d.resolved_khz <= 1_106_000), "{old:?}");
        assert!(old.iter().any(|d| d.resolved_khz == 1_106_000), "{old:?}");
        // Before 5.3 there is no uclamp.
        let none = big_requests("schedutil:kernel=5.2", hog().pinned(vec![6]).uclamp(None, Some(300)), 0);
        assert!(none.iter().any(|d| d.resolved_khz == 2_802_000), "{none:?}");
    }

    #[test]
    fn the_run_queue_takes_the_highest_clamp_of_its_tasks() {
        // Two small tasks share CPU 6; only one asks for a floor. While it is runnable the
        // floor holds for the whole run-queue.
        let a = periodic("a", 30.0).pinned(vec![6]).uclamp(Some(700), None);
        let b = periodic("b", 30.0).pinned(vec![6]).uclamp(Some(200), None).start_at(3 * MS);
        let r = run_tasks("pixel6", "schedutil", vec![a, b], 400 * MS);
        let log: Vec<Decision> = r.decisions.unwrap().into_iter().filter(|d| d.policy == 2).collect();
        let floors: std::collections::BTreeSet<u64> =
            log.iter().filter_map(|d| input(d, "uclamp_min")).map(|v| v as u64).collect();
        assert!(floors.contains(&700) && floors.iter().all(|&f| [0, 200, 700].contains(&f)), "{floors:?}");
    }
}

mod response_time {
    use super::*;

    #[test]
    fn pixel6_defaults_match_the_published_figures() {
        // The margins series' v2 defaults reported for Pixel 6 — 8/29/155 ms (PELT half-life 32 ms) and
        // 4/15/78 ms (16 ms) for little/mid/big — from the second-highest OPP's capacity.
        let plat = Platform::from_json(&common::preset("pixel6"), "pixel6").unwrap();
        let d = dvfslab_sim::describe::describe(&plat);
        let policies = d["policies"].as_array().unwrap();
        let by = |half_life: &str| -> Vec<u64> {
            policies.iter().map(|p| p["response_time_ms_default"][half_life].as_u64().unwrap()).collect()
        };
        assert_eq!(by("32"), [8, 29, 155]);
        assert_eq!(by("16"), [4, 15, 78]);
        assert_eq!(by("8"), [2, 8, 39]);
        let cpus: Vec<serde_json::Value> = policies.iter().map(|p| p["cpus"].clone()).collect();
        assert_eq!(cpus, [serde_json::json!([0, 1, 2, 3]), serde_json::json!([4, 5]), serde_json::json!([6, 7])]);
        // cpufreq-dt reports 500 µs; the default kernel (6.12+) takes 1.5 × that.
        assert!(policies.iter().all(|p| p["rate_limit_us"] == 750));
    }
}

/// Governor callbacks from outside the policy (cpufreq_this_cpu_can_update).
mod remote_callbacks {
    use super::*;

    /// Times after the start at which schedutil evaluated policy 2 (the big CPUs) while a
    /// task on `waker_cpu` wakes a task pinned on big CPU 6 every 10 ms.
    fn big_decisions(waker_cpu: usize) -> Vec<u64> {
        let waker = vec![Op::WaitPeriod { period_ns: 10 * MS }, Op::Post { ch: 0, sync: false }, Op::Jump { to: 0 }];
        let sleeper = vec![
            Op::Wait { ch: 0 },
            Op::Run { cycles: Amount::Fixed(cycles_for_util(100.0, 10 * MS)), mem_frac: 0.0 },
            Op::Jump { to: 0 },
        ];
        let tasks = vec![
            TaskSpec::new("waker", Rc::from(waker)).pinned(vec![waker_cpu]),
            TaskSpec::new("sleeper", Rc::from(sleeper)).pinned(vec![6]),
        ];
        let r = run_tasks("pixel6", "schedutil", tasks, 200 * MS);
        r.decisions.unwrap().iter().filter(|d| d.policy == 2 && d.time_ns > 0).map(|d| d.time_ns).collect()
    }

    #[test]
    fn a_wake_up_enqueued_from_another_policy_is_evaluated_there_on_cpufreq_dt() {
        // The little CPU 0 enqueues the sleeper on big CPU 6 (one LLC on Pixel 6). cpufreq-dt
        // sets dvfs_possible_from_any_cpu (cpufreq_init, drivers/cpufreq/cpufreq-dt.c), so
        // cpufreq_this_cpu_can_update (kernel/sched/cpufreq.c; cpufreq_can_do_remote_dvfs
        // 4.14-5.4) lets schedutil's sugov_should_update_freq act on that remote callback: the
        // big policy re-evaluates at the wake-up as when big CPU 7, in the policy, wakes it.
        // The waker posts when its 10 ms period starts, plus its own idle exit (under 0.5 ms).
        let at_wakeup = |t: u64| t % (10 * MS) < MS;
        for waker_cpu in [0, 7] {
            let decisions = big_decisions(waker_cpu);
            assert!(decisions.iter().filter(|&&t| at_wakeup(t)).count() >= 10, "{waker_cpu}: {decisions:?}");
        }
    }
}

/// Placement mechanisms exist from the kernel version that introduced them.
mod placement_by_kernel {
    use super::*;

    #[test]
    fn misfit_migration_starts_with_4_20() {
        // update_misfit_status and the group_misfit_task balance type came in 4.20: on 4.19 a
        // hog that outgrew its little CPU stays there (it never sleeps, so no wake-up moves it).
        let r = run_tasks("pixel6", "schedutil:kernel=4.19", vec![hog()], 500 * MS);
        let log = r.migrations.unwrap();
        assert!(log.iter().all(|m| m.reason != "misfit" && m.reason != "misfit_idle"), "{log:?}");
        assert!(r.summary.per_cpu[LITTLE].iter().any(|c| c.busy_pct > 99.0));
        let r = run_tasks("pixel6", "schedutil:kernel=4.20", vec![hog()], 500 * MS);
        assert!(r.migrations.unwrap().iter().any(|m| m.reason == "misfit"));
    }

    #[test]
    fn capacity_aware_wake_ups_follow_the_kernel_of_the_time() {
        // A 300-util periodic task, too big for a little CPU, without EAS. 5.7+:
        // select_idle_capacity finds an idle CPU it fits, never a little one. 4.9-5.6: wake_cap
        // finds it does not fit a little CPU and find_idlest_cpu (the slow path) places it by
        // load, off the little cluster too (on 4.19 without any misfit migration to help).
        // Before 4.9 the wake-up path ignored capacity: the idle previous CPU is taken, so a
        // task started on a little CPU stays on little CPUs.
        // On 4.19 PELT scales each contribution by the CPU's capacity (accumulate_sum, before
        // 5.1): on a little CPU the task's util cannot pass that CPU's capacity, so it is seen
        // not to fit only once it nears it, some 200 ms in, where 5.x sees it at once.
        for (governor, most) in
            [("schedutil:kernel=5.7,eas=0", 5.0), ("schedutil:kernel=5.6,eas=0", 5.0), ("schedutil:kernel=4.19", 15.0)]
        {
            let r = run_tasks("pixel6", governor, vec![periodic("p", 300.0)], 2000 * MS);
            let busy_little: f64 = r.summary.per_cpu[LITTLE].iter().map(|c| c.busy_pct).sum();
            assert!(busy_little < most, "{governor}: {busy_little} % on little CPUs");
            let moves = r.migrations.unwrap();
            let last = moves.last().expect("the task left its first CPU");
            assert!(!LITTLE.contains(&last.dst_cpu), "{governor}: {last:?}");
        }
        let r = run_tasks("pixel6", "schedutil:kernel=4.8", vec![periodic("p", 300.0)], 2000 * MS);
        let busy_other: f64 = r.summary.per_cpu[MID].iter().chain(&r.summary.per_cpu[BIG]).map(|c| c.busy_pct).sum();
        assert!(busy_other < 1.0, "{busy_other} % on mid and big CPUs");
    }
}

mod exit_callback {
    use super::*;

    #[test]
    fn an_exiting_tasks_util_leaves_its_cpu_at_the_next_update() {
        // do_exit ends in __schedule, whose dequeue_task runs the governor callback like a
        // sleep's. A task pinned on big CPU 6 (a two-CPU policy, so no busy hold) runs 40 ms
        // and exits; its util leaves the run-queue only at the next update (task_dead_fair's
        // remove_entity_load_avg): the blocked-average update of the CPU's idle entry
        // (nohz_newidle_balance), whose governor callback the rate limit may skip right
        // after the dequeue's. A task that wakes there 40 ms later finds the util gone and
        // the policy low.
        let work = vec![Op::Run { cycles: Amount::Fixed(cycles_for_util(1024.0, 40 * MS)), mem_frac: 0.0 }, Op::Exit];
        let task = TaskSpec::new("once", Rc::from(work)).pinned(vec![6]);
        let later = vec![
            Op::Sleep { ns: Amount::Fixed(80.0 * MS as f64) },
            Op::Run { cycles: Amount::Fixed(cycles_for_util(1024.0, MS / 10)), mem_frac: 0.0 },
            Op::Exit,
        ];
        let later = TaskSpec::new("later", Rc::from(later)).pinned(vec![6]);
        let r = run_tasks("pixel6", "schedutil:kernel=6.18", vec![task, later], 100 * MS);
        let big: Vec<&Decision> = r.decisions.as_ref().unwrap().iter().filter(|d| d.policy == 2).collect();
        let util = |d: &Decision| d.inputs.iter().find(|(k, _)| *k == "util_avg").map(|&(_, v)| v).unwrap();
        let lowest = big.iter().map(|d| d.resolved_khz).min().unwrap();
        assert!(big.iter().any(|d| d.resolved_khz > lowest), "{big:?}");
        let at_exit = big.iter().rfind(|d| d.time_ns < 75 * MS).expect("a decision at the exit");
        assert!(at_exit.time_ns >= 30 * MS, "{at_exit:?}");
        let at_wake = big.iter().find(|d| d.time_ns >= 75 * MS).expect("a decision at the wake-up");
        assert!(util(at_wake) < 100.0, "{at_wake:?}");
        assert!(at_wake.resolved_khz < at_wake.max_khz / 2, "{at_wake:?}");
    }
}
