//! rt-app files: every shipped example runs, and the events mean what rt-app means.

use crate::common;

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use dvfslab_sim::hw::platform::Platform;
use dvfslab_sim::sched::task::Op;
use dvfslab_sim::workload::rtapp::{self, PhaseFigures, RtApp, Summary};
use dvfslab_sim::workload::{DeviceSpec, Metric, RunStats, TaskSpec, Workload};
use dvfslab_sim::{Sim, SimConfig, SimResult};

/// The examples shipped in the repository (docs/rtapp.md says what each shows).
fn shipped_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/rt-app")
}

/// The shipped examples, by file name: the list must match the folder.
const SHIPPED: &[&str] = &[
    "barriers.json",
    "broadcast-sync.json",
    "cond-handover.json",
    "fork.json",
    "governor-efficiency.json",
    "legacy-v0.json",
    "mem-io.json",
    "phases-affinity.json",
    "ping-pong.json",
    "playback.json",
    "semaphores.json",
    "timers.json",
];

/// rt-app's own `doc/examples`, when `DVFSLAB_RTAPP_EXAMPLES` names their folder (CI sets it).
/// A folder that is named but missing fails the test rather than testing less.
fn upstream_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("DVFSLAB_RTAPP_EXAMPLES")?);
    assert!(dir.is_dir(), "DVFSLAB_RTAPP_EXAMPLES={}: no such folder", dir.display());
    Some(dir)
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

fn example(name: &str) -> String {
    let path = shipped_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// An rt-app workload that keeps its per-phase log for the test to read.
struct Logged {
    rtapp: RtApp,
    log: Rc<RefCell<Option<Summary>>>,
}

impl Workload for Logged {
    fn tasks(&self, plat: &Platform) -> Vec<TaskSpec> {
        self.rtapp.tasks(plat)
    }
    fn programs(&self, plat: &Platform) -> Vec<Rc<[Op]>> {
        self.rtapp.programs(plat)
    }
    fn devices(&self) -> Vec<DeviceSpec> {
        self.rtapp.devices()
    }
    fn default_duration_ns(&self) -> u64 {
        self.rtapp.default_duration_ns()
    }
    fn metric(&self, stats: &RunStats) -> Metric {
        *self.log.borrow_mut() = Some(self.rtapp.summary(stats));
        self.rtapp.metric(stats)
    }
}

fn cfg(governor: &str, duration_s: f64) -> SimConfig {
    SimConfig { governor: governor.into(), duration_ns: Some((duration_s * 1e9) as u64), ..SimConfig::default() }
}

/// Run `text` and return the result with rt-app's per-phase log.
fn run(platform: &str, governor: &str, text: &str, duration_s: f64) -> (SimResult, Summary) {
    let plat = Platform::from_json(&common::preset(platform), platform).unwrap();
    let rtapp = RtApp::parse(text, "rt-app test.json").unwrap_or_else(|e| panic!("{e}"));
    rtapp.check(&plat).unwrap();
    let log = Rc::new(RefCell::new(None));
    let w = Logged { rtapp, log: log.clone() };
    let r = Sim::with_workload(plat, &cfg(governor, duration_s), Box::new(w), "rt-app".into()).unwrap().run().unwrap();
    let summary = log.borrow_mut().take().expect("the metric was computed");
    (r, summary)
}

fn phase<'a>(s: &'a Summary, task: &str, phase: &str) -> &'a PhaseFigures {
    s.phases.iter().find(|p| p.task == task && p.phase == phase).unwrap_or_else(|| panic!("no {task}/{phase}: {s:?}"))
}

/// A shipped example calibrated on `CPU0`, calibrated on Juno's big CPU 1 instead.
fn on_big(text: &str) -> String {
    assert!(text.contains(r#""calibration" : "CPU0""#));
    text.replace(r#""calibration" : "CPU0""#, r#""calibration" : "CPU1""#)
}

fn near(x: f64, want: f64, tol: f64) -> bool {
    (x - want).abs() <= tol
}

/// juno-r2 numbers its CPUs as Linux does there: LITTLE CPU 0 (the boot CPU, rt-app's default
/// calibration CPU), big CPUs 1-2, LITTLE CPUs 3-5.
const JUNO: &str = "juno-r2";
/// Calibrate on Juno's big CPU 1 (tests written for a big calibration CPU).
const ON_BIG: &str = r#""global": {"calibration": "CPU1"}, "#;
const PERF: &str = "performance";

mod examples {
    use super::*;

    /// Run `file` for 0.5 s on pixel6 and check its headline; `idle` files do no work in that time.
    fn runs_and_reports_the_run_stretch(file: &Path, idle: bool) {
        let text = std::fs::read_to_string(file).unwrap();
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let r = rtapp::simulate(&common::preset("pixel6"), "pixel6", &text, &name, &cfg("schedutil", 0.5))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let m = &r.summary.metric;
        assert_eq!((m.name.as_str(), m.unit.as_str(), m.better), ("run_stretch", "x", "lower"), "{name}");
        assert!(m.value.is_finite() && m.value >= 0.0, "{name}: {}", m.value);
        assert_eq!(r.summary.workload, format!("rt-app:{name}"));
        assert_eq!(r.summary.work_done_cycles > 0.0, !idle, "{name}");
        // Calibrated on pixel6's CPU 0, a LITTLE one: a big CPU is up to 6.4 times faster.
        assert!(idle || m.value >= 0.15, "{name}: run stretch {}", m.value);
    }

    #[test]
    fn every_example_file_runs_and_reports_the_run_stretch() {
        let shipped = json_files(&shipped_dir());
        let names: Vec<String> = shipped.iter().map(|f| f.file_name().unwrap().to_string_lossy().into()).collect();
        assert_eq!(names, SHIPPED, "docs/rtapp.md lists the shipped examples");
        for f in &shipped {
            // The governor-efficiency recipe first waits for its 1 s tick.
            runs_and_reports_the_run_stretch(f, f.ends_with("governor-efficiency.json"));
        }
        if let Some(dir) = upstream_dir() {
            let files = json_files(&dir);
            assert_eq!(files.len(), 28, "{files:?}");
            for f in &files {
                // The merge fragments without tasks leave the system idle, and the governor-
                // efficiency test first sleeps 1.2 s; everything else runs.
                let idle = ["merge-global.json", "merge-resources.json", "cpufreq_governor_efficiency-dvfs.json"]
                    .iter()
                    .any(|n| f.ends_with(n));
                runs_and_reports_the_run_stretch(f, idle);
            }
        }
    }

    #[test]
    fn governor_efficiency_recipe_measures_the_run_phase() {
        // 8 loops of (timer 1 s, run 0.7 s) pinned to CPU 0, calibrated at 96 ns/loop there.
        let text = example("governor-efficiency.json");
        let (r, log) = run(JUNO, PERF, &text, 5.5);
        let busy = phase(&log, "probe", "busy");
        assert_eq!(busy.iterations, 4, "runs end at 1.7, 2.7, 3.7 and 4.7 s: {log:?}");
        // 700 ms rounded down to whole 96 ns loops, on the calibration CPU 0 at its maximum.
        assert!(near(busy.run_us, 700_000.0, 500.0), "{busy:?}");
        assert_eq!(busy.perf, Some(700_000_000 / 96).map(|l| l as f64 / 1000.0));
        assert!(near(r.summary.metric.value, 1.0, 0.001), "{}", r.summary.metric.value);
        // The timer fires every 1 s (up to 5 s): 1 s of slack at the start, then 0.3 s after
        // each run.
        let idle = phase(&log, "probe", "idle");
        assert_eq!(idle.iterations, 5, "{log:?}");
        let n = idle.iterations as f64;
        let want = (1_000_000.0 + (n - 1.0) * 300_000.0) / n - log.wu_lat_us;
        assert!(near(idle.slack_us.unwrap(), want, 100.0), "{idle:?}");
        // At the LITTLE CPUs' lowest frequency, 450 of 950 MHz, the run takes 2.1 times as long.
        let slow = run(JUNO, "powersave", &text, 6.0).1;
        assert!(phase(&slow, "probe", "busy").run_us > 1.9 * 700_000.0, "{slow:?}");
    }
}

mod grammar {
    use super::*;

    #[test]
    fn repeated_keys_run_in_order() {
        let text = r#"{"tasks": {"t": {"cpus": [1], "loop": 3, "runtime": 1000, "sleep": 1000, "runtime": 2000}}}"#;
        let (_, log) = run(JUNO, PERF, text, 1.0);
        let p = phase(&log, "t", "t");
        assert_eq!(p.iterations, 3);
        assert_eq!(p.c_duration_us, 3000);
        assert!(near(p.run_us, 3000.0, 5.0), "both runs ran: {p:?}");
        // The sleep ends with a wake-up from idle (1.5 ms on Juno).
        assert!(p.period_us > 4000.0 && p.period_us < 6000.0, "{p:?}");
    }

    #[test]
    fn run_is_fixed_work_and_runtime_fixed_time() {
        let text = |event: &str| {
            format!(r#"{{{ON_BIG}"tasks": {{"t": {{"cpus": [1], "loop": 5, "{event}": 10000, "sleep": 5000}}}}}}"#)
        };
        for (event, slow_stretch) in [("run", 2.0), ("runtime", 1.0)] {
            let fast = run(JUNO, "userspace:scaling_setspeed=1200000", &text(event), 1.0).0.summary.metric.value;
            let slow = run(JUNO, "userspace:scaling_setspeed=600000", &text(event), 1.0).0.summary.metric.value;
            assert!(near(fast, 1.0, 0.01), "{event} at 1.2 GHz: {fast}");
            assert!(near(slow, slow_stretch, 0.02), "{event} at 600 MHz: {slow}");
        }
    }

    #[test]
    fn calibration_cpu_sets_the_speed_of_run() {
        // Calibrated on the LITTLE CPU 0 (485/1024 of the big one's capacity at 950 vs 1200 MHz),
        // 10 ms of run take 10 ms there and 3.75 ms on the big CPU 1.
        let text = r#"{"global": {"calibration": "CPU0"}, "tasks": {"t": {"cpus": [1], "loop": 4, "run": 10000, "sleep": 1000}}}"#;
        let (r, log) = run(JUNO, PERF, text, 1.0);
        let want = 10_000.0 * 485.0 * 950.0 / (1024.0 * 1200.0);
        assert!(near(phase(&log, "t", "t").run_us, want, 20.0), "{log:?}");
        assert!(near(r.summary.metric.value, want / 10_000.0, 0.005));
    }

    #[test]
    fn phases_run_in_order_with_their_loops_and_affinity() {
        // Calibrated on the big CPU 1. One pass: warm on the LITTLE CPU 0 (its runs take 2.7
        // times as long), split 1.4 ms on CPU 1, home on the big CPU 2; 0.2 s holds over ten
        // passes, the last one maybe cut short.
        let (r, log) = run(JUNO, PERF, &on_big(&example("phases-affinity.json")), 0.2);
        let passes = phase(&log, "walker", "split").iterations;
        assert!(passes > 10, "{log:?}");
        let warm = phase(&log, "walker", "warm").iterations;
        let home = phase(&log, "walker", "home").iterations;
        assert!((2 * passes..=2 * passes + 2).contains(&warm), "{log:?}");
        assert!((3 * passes - 3..=3 * passes).contains(&home), "{log:?}");
        // Both runs of the split phase ran: its run time is 1 ms of work, not 0.5.
        let split = phase(&log, "walker", "split");
        assert_eq!(split.c_duration_us, 1000);
        assert!(near(split.run_us, 1000.0, 5.0), "{split:?}");
        let busy: Vec<usize> = r.summary.per_cpu.iter().filter(|c| c.busy_pct > 0.0).map(|c| c.cpu).collect();
        assert_eq!(busy, vec![0, 1, 2], "warm on CPU 0, split on CPU 1, home on the task's CPU 2");
    }

    #[test]
    fn fork_starts_instance_zero_templates() {
        // launcher (loop 1) forks helper and worker (instance 0) once each; they loop forever.
        let (_, log) = run(JUNO, PERF, &on_big(&example("fork.json")), 0.5);
        assert_eq!(phase(&log, "launcher", "first").iterations, 1);
        assert_eq!(phase(&log, "launcher", "second").iterations, 1);
        // worker, forked at about 10 ms, loops every 40 ms or so.
        let worker = phase(&log, "worker", "worker").iterations;
        assert!((9..=13).contains(&worker), "the forked template ran: {log:?}");
        // Two helpers (one at launch, one forked) each loop every 17.5 to 21 ms (15 ms, on the
        // cluster fork balancing starts it on, and a wake-up from idle): one alone would make
        // half as many iterations.
        let helper = phase(&log, "helper", "helper").iterations;
        assert!((44..=60).contains(&helper), "{log:?}");
        // late starts 50 ms in and runs its 10 loops of 10 ms.
        assert_eq!(phase(&log, "late", "late").iterations, 10, "{log:?}");
    }
}

mod timers {
    use super::*;

    #[test]
    fn a_timer_releases_every_period() {
        let text = r#"{"tasks": {"t": {"cpus": [0], "runtime": 2000, "timer": {"ref": "unique", "period": 10000}}}}"#;
        let (_, log) = run(JUNO, PERF, text, 1.0);
        let p = phase(&log, "t", "t");
        assert!((99..=100).contains(&p.iterations), "{p:?}");
        // Every iteration lasts a period; the first also waited for CPU 0 to leave idle.
        assert!(near(p.period_us, 10_000.0, 20.0), "{p:?}");
        assert!(near(p.run_us, 2000.0, 0.01), "{p:?}");
        // Juno's CPUs sleep between releases and take 1.5 ms to wake up: that is wu_lat,
        // and the slack is what remains of the period.
        assert!(log.wu_lat_us > 0.0 && log.wu_lat_us < 1700.0, "{}", log.wu_lat_us);
        assert!(near(p.slack_us.unwrap(), 10_000.0 - 2000.0 - log.wu_lat_us, 30.0), "{p:?}");
    }

    #[test]
    fn overruns_give_negative_slack() {
        let text = r#"{"tasks": {"t": {"cpus": [0], "runtime": 12000, "timer": {"ref": "unique", "period": 10000}}}}"#;
        let (_, log) = run(JUNO, PERF, text, 1.0);
        assert!(phase(&log, "t", "t").slack_us.unwrap() < -1000.0, "{log:?}");
    }

    /// rt-app v0.x (the grammar before September 2014) adds the period to the previous release
    /// and sleeps only while that release is ahead (src/rt-app.c, thread_body, August 2014): a
    /// late thread keeps the grid, as rt-app's later absolute mode, and its lateness grows.
    #[test]
    fn a_legacy_thread_keeps_its_release_grid() {
        let text = format!(r#"{{{ON_BIG}"tasks": {{"t": {{"exec": 12000, "period": 10000}}}}}}"#);
        let (_, log) = run(JUNO, PERF, &text, 1.0);
        let slack = phase(&log, "t", "t").slack_us.unwrap();
        assert!(slack < -20_000.0, "{log:?}");
    }

    /// rt-app's timer (src/rt-app.c, run_event, case rtapp_timer) computes the slack as the next
    /// release minus now, before deciding to sleep. A 12 ms activation every 10 ms: in relative
    /// mode (rt-app's default) the late release moves to now, so every activation is 2 ms late;
    /// in absolute mode the grid stays, and the lateness grows by 2 ms per activation. Neither
    /// mode sleeps, so rt-app logs no wake-up latency (wu_latency = 0 on that path).
    #[test]
    fn late_timers_run_at_once_and_absolute_mode_accumulates_lateness() {
        let text = |mode: &str| {
            format!(
                r#"{{"tasks": {{"t": {{"cpus": [0], "runtime": 12000, "timer": {{"ref": "unique", "period": 10000, "mode": "{mode}"}}}}}}}}"#
            )
        };
        let relative = run(JUNO, PERF, &text("relative"), 1.0).1;
        let absolute = run(JUNO, PERF, &text("absolute"), 1.0).1;
        for log in [&relative, &absolute] {
            let p = phase(log, "t", "t");
            // Back to back: 1 s / 12 ms activations, none waits for a period.
            assert!((82..=84).contains(&p.iterations), "{p:?}");
            assert!(near(p.period_us, 12_000.0, 20.0), "{p:?}");
            assert_eq!(log.wu_lat_us, 0.0, "{log:?}");
        }
        assert!(near(phase(&relative, "t", "t").slack_us.unwrap(), -2000.0, 20.0), "{relative:?}");
        // Lateness k × 2 ms at activation k: a mean of about 83 × 2 ms / 2.
        let abs_slack = phase(&absolute, "t", "t").slack_us.unwrap();
        assert!(abs_slack < -70_000.0 && abs_slack > -100_000.0, "{absolute:?}");
    }

    #[test]
    fn a_shared_timer_is_shared_by_instances_a_unique_one_is_not() {
        let text = |r: &str| {
            format!(
                r#"{{"tasks": {{"t": {{"instance": 2, "runtime": 1000, "timer": {{"ref": "{r}", "period": 10000}}}}}}}}"#
            )
        };
        let shared = run(JUNO, PERF, &text("tick"), 1.0).1;
        let unique = run(JUNO, PERF, &text("unique"), 1.0).1;
        // Two instances: 2 × 100 releases with one timer each, 2 × 50 sharing one.
        assert!((198..=200).contains(&phase(&unique, "t", "t").iterations), "{unique:?}");
        assert!((98..=100).contains(&phase(&shared, "t", "t").iterations), "{shared:?}");
        assert!(near(phase(&shared, "t", "t").period_us, 20_000.0, 40.0), "{shared:?}");
        let slack = phase(&shared, "t", "t").slack_us.unwrap();
        assert!(near(slack, 20_000.0 - 1000.0 - shared.wu_lat_us, 30.0), "{shared:?}");
    }
}

mod sync {
    use super::*;

    #[test]
    fn a_barrier_waits_for_every_party() {
        let text = r#"{"tasks": {
            "a": {"cpus": [0], "runtime": 1000, "barrier": "b"},
            "c": {"cpus": [1], "runtime": 5000, "barrier": "b"}}}"#;
        let (_, log) = run(JUNO, PERF, text, 0.5);
        let (a, c) = (phase(&log, "a", "a"), phase(&log, "c", "c"));
        // a waits for c every time (plus, at most, a wake-up from idle: 1.6 ms on Juno with
        // every core asleep, as at the start, which shortens a's mean period by 1.6 ms / 99).
        for p in [a, c] {
            assert!(p.period_us > 4980.0 && p.period_us < 6600.0, "{log:?}");
        }
        assert!(a.iterations.abs_diff(c.iterations) <= 1, "{log:?}");
    }

    #[test]
    fn barrier_parties_count_instances() {
        // Three instances of a and one c: the barrier needs four arrivals.
        let text = r#"{"tasks": {
            "a": {"instance": 3, "runtime": 1000, "barrier": "b"},
            "c": {"runtime": 3000, "barrier": "b"}}}"#;
        let (_, log) = run(JUNO, PERF, text, 0.3);
        let period = phase(&log, "a", "a").period_us;
        assert!(period > 2990.0 && period < 4600.0, "a waits for c: {log:?}");
    }

    #[test]
    fn semaphores_count_posts_and_resumes_are_not_counted() {
        let text = r#"{"tasks": {
            "w": {"loop": -1, "sem_wait": "s", "runtime": 100},
            "s": {"loop": -1, "suspend": "s", "runtime": 100},
            "p": {"loop": 1, "sleep": 1000, "sem_post": "s", "sem_post": "s", "sem_post": "s",
                  "resume": "s", "resume": "s", "resume": "s"}}}"#;
        let (_, log) = run(JUNO, PERF, text, 0.1);
        assert_eq!(phase(&log, "w", "w").iterations, 3, "every post is kept");
        // A resume nobody waits for is lost in rt-app; the simulator remembers at most one.
        assert!(phase(&log, "s", "s").iterations <= 2, "{log:?}");
        assert!(phase(&log, "s", "s").iterations >= 1, "{log:?}");
    }

    #[test]
    fn suspend_resume_ping_pong() {
        let (_, log) = run(JUNO, PERF, &example("ping-pong.json"), 0.5);
        let (a, b) = (phase(&log, "ping", "ping"), phase(&log, "pong", "pong"));
        // Each runs 8 ms of work, then wakes the other and waits to be woken: they keep in step.
        // (In rt-app the first resume is lost and they alternate; here it is remembered, so they
        // run side by side: see docs/rtapp.md, Approximations.)
        assert!(a.iterations >= 30 && a.iterations.abs_diff(b.iterations) <= 1, "{log:?}");
    }

    #[test]
    fn condition_wait_and_signal_hand_over() {
        // The client signals the server and waits for its reply, every 20 ms.
        let (_, log) = run(JUNO, PERF, &example("cond-handover.json"), 1.0);
        let server = phase(&log, "server", "server");
        let client = phase(&log, "client", "client");
        assert!((47..=50).contains(&client.iterations), "{log:?}");
        assert!(server.iterations.abs_diff(client.iterations) <= 1, "{log:?}");
        // The client's iteration spans the server's 300 µs answer.
        assert!(client.period_us > 1400.0 + 300.0, "{log:?}");
    }
}

mod errors {
    use super::*;

    fn err(text: &str) -> String {
        match RtApp::parse(text, "rt-app bad.json") {
            Ok(_) => panic!("accepted: {text}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn malformed_json_says_where() {
        let e = err("{\n  \"tasks\": {\n    \"t0\": {\"run\": 1000,, }\n  }\n}");
        assert!(e.starts_with("rt-app bad.json: line 3, column 24: expected a \"key\""), "{e}");
    }

    #[test]
    fn bad_events_name_their_json_path() {
        let cases = [
            (r#"{"tasks": {"t0": {"run": "fast"}}}"#, "rt-app bad.json: tasks.t0.run: expected an integer >= 0 (µs)"),
            (
                r#"{"tasks": {"thread0": {"phases": {"p1": {"timer": {"ref": "t", "period": 1.5}}}}}}"#,
                "rt-app bad.json: tasks.thread0.phases.p1.timer.period: expected an integer >= 0 (µs), got 1.5",
            ),
            (r#"{"tasks": {"t0": {"timer": 5}}}"#, "rt-app bad.json: tasks.t0.timer: expected an object"),
            (r#"{"tasks": {"t0": {"run": 1, "slepe": 5}}}"#, "rt-app bad.json: tasks.t0.slepe: unknown key"),
            (r#"{"tasks": {"t0": {"run": 1, "fork": "ghost"}}}"#, "rt-app bad.json: tasks.t0.fork: forks \"ghost\""),
            (r#"{"tasks": {"t0": {"run": 1, "memrun": {"type": "copy"}}}}"#, "rt-app bad.json: tasks.t0.memrun.type"),
            (r#"{"tasks": {"t0": {"loop": 2, "instance": 1}}}"#, "rt-app bad.json: tasks.t0: no events"),
            (r#"{"tasks": {"t0": {"run": 1, "wait": {"ref": "c"}}}}"#, "rt-app bad.json: tasks.t0.wait.mutex: missing"),
            (
                r#"{"tasks": {"t0": {"phases": {"p": {"run": 1, "policy": "SCHED_FIFO"}}}}}"#,
                "rt-app bad.json: tasks.t0.phases.p.policy: changing the policy",
            ),
        ];
        for (text, want) in cases {
            let e = err(text);
            assert!(e.starts_with(want), "{text}\n  got: {e}\n want: {want}");
        }
    }

    #[test]
    fn absurd_numbers_are_refused() {
        let cases = [
            (
                r#"{"tasks": {"t0": {"instance": 1e8, "run": 1}}}"#,
                "tasks.t0.instance: expected an integer >= 0 (threads), got 100000000.0",
            ),
            (
                r#"{"tasks": {"t0": {"instance": -3, "run": 1}}}"#,
                "tasks.t0.instance: expected an integer >= 0 (threads), got -3",
            ),
            (
                r#"{"tasks": {"t0": {"instance": 2.5, "run": 1}}}"#,
                "tasks.t0.instance: expected an integer >= 0 (threads), got 2.5",
            ),
            (r#"{"tasks": {"t0": {"loop": 1.5, "run": 1}}}"#, "tasks.t0.loop: expected an integer (count), got 1.5"),
            (
                r#"{"tasks": {"t0": {"loop": -5, "run": 1}}}"#,
                "tasks.t0.loop: expected -1 (forever) or a count >= 1, got -5",
            ),
            (
                r#"{"tasks": {"t0": {"phases": {"p": {"loop": 0, "run": 1}}}}}"#,
                "tasks.t0.phases.p.loop: expected -1 (forever) or a count >= 1, got 0",
            ),
            (
                r#"{"tasks": {"t0": {"exec": 10, "period": 100, "loop": -2}}}"#,
                "tasks.t0.loop: expected -1 (forever) or a count >= 1, got -2",
            ),
            (
                r#"{"tasks": {"t0": {"run": 3000000000}}}"#,
                "tasks.t0.run: 3000000000 is beyond rt-app's largest integer, 2147483647 (µs)",
            ),
            (
                r#"{"tasks": {"t0": {"run": 1, "memrun": {"type": "chase", "count": 9223372036854775807}}}}"#,
                "tasks.t0.memrun.count: 9223372036854775807 is beyond rt-app's largest integer",
            ),
            (
                r#"{"tasks": {"t0": {"loop": 2000000000, "run": 1}}}"#,
                "tasks.t0.loop: the loops unroll into more than 1048576 operations",
            ),
        ];
        for (text, want) in cases {
            let e = err(text);
            assert!(e.starts_with(&format!("rt-app bad.json: {want}")), "{text}\n  got: {e}\n want: {want}");
        }
    }

    #[test]
    fn more_threads_than_a_run_may_create_are_refused() {
        let limit = dvfslab_sim::sched::task::MAX_TASKS;
        let cases = [
            // One task over the limit, named at its instance with its line.
            (
                format!(r#"{{"tasks": {{"t0": {{"instance": {}, "run": 1}}}}}}"#, limit + 1),
                format!("tasks.t0.instance: {} threads: a run creates at most {limit} (instances and forks together) (line 1)", limit + 1),
            ),
            (
                r#"{"tasks": {"t0": {"instance": 100000000, "run": 1}}}"#.to_string(),
                format!("tasks.t0.instance: 100000000 threads: a run creates at most {limit}"),
            ),
            // Tasks under the limit that together are over it, named where the count crosses it.
            (
                format!(r#"{{"tasks": {{"a": {{"instance": {limit}, "run": 1}}, "b": {{"instance": 1, "run": 1}}}}}}"#),
                format!("tasks.b.instance: {} threads", limit + 1),
            ),
            // 100 threads fork 1000 times each (a phase of 10 loops, run 100 times).
            (
                r#"{"tasks": {"w": {"instance": 0, "loop": 1, "run": 1},
                    "f": {"instance": 100, "loop": 100, "phases": {"p": {"loop": 10, "fork": "w", "run": 1}}}}}"#
                    .to_string(),
                "tasks.f.phases.p.fork: 100100 threads".to_string(),
            ),
        ];
        for (text, want) in cases {
            let e = err(&text);
            assert!(e.starts_with(&format!("rt-app bad.json: {want}")), "{text}\n  got: {e}\n want: {want}");
        }
        // At the limit, and with forks whose number only the run decides, the file is read.
        let ok = [
            format!(r#"{{"tasks": {{"t0": {{"instance": {limit}, "run": 1}}}}}}"#),
            r#"{"tasks": {"w": {"instance": 0, "loop": 1, "run": 1}, "f": {"loop": -1, "fork": "w", "run": 1}}}"#
                .into(),
            r#"{"tasks": {"w": {"instance": 0, "loop": 1, "run": 1},
                "f": {"loop": 5, "phases": {"a": {"loop": -1, "run": 1}, "b": {"fork": "w", "run": 1}}}}}"#
                .into(),
        ];
        for text in ok {
            RtApp::parse(&text, "rt-app ok.json").unwrap_or_else(|e| panic!("{text}: {e}"));
        }
    }

    #[test]
    fn cpus_that_do_not_exist_are_refused() {
        let text = r#"{"tasks": {"t0": {"cpus": [0, 9], "run": 1000}}}"#;
        let e =
            rtapp::simulate(&common::preset(JUNO), JUNO, text, "x.json", &cfg(PERF, 0.1)).err().unwrap().to_string();
        assert!(e.starts_with("rt-app x.json: tasks.t0.cpus: CPU 9 does not exist on juno-r2"), "{e}");
    }

    #[test]
    fn json_text_is_detected_as_a_workload_spec() {
        let cfg =
            SimConfig { workload: r#"{"tasks": {"t": {"runtime": 100, "sleep": 900}}}"#.into(), ..cfg(PERF, 0.05) };
        let r = dvfslab_sim::simulate(&common::preset(JUNO), JUNO, &cfg).unwrap();
        assert_eq!((r.summary.workload.as_str(), r.summary.metric.name.as_str()), ("rt-app", "run_stretch"));
        let bad = SimConfig { workload: r#"{"tasks": {"t": {"sleep": "x"}}}"#.into(), ..cfg };
        let e = dvfslab_sim::simulate(&common::preset(JUNO), JUNO, &bad).err().unwrap().to_string();
        assert!(e.starts_with("rt-app: tasks.t.sleep: expected an integer"), "{e}");
    }
}

mod deadlocks {
    use super::*;

    fn err(text: &str) -> String {
        match RtApp::parse(text, "rt-app locks.json") {
            Ok(_) => panic!("accepted: {text}"),
            Err(e) => e.to_string(),
        }
    }

    fn refused(text: &str, want: &[&str]) {
        let e = err(text);
        assert!(e.starts_with("rt-app locks.json: tasks."), "{e}");
        for w in want {
            assert!(e.contains(w), "{text}\n  got: {e}\n want: {w}");
        }
    }

    fn accepted(text: &str) {
        RtApp::parse(text, "rt-app locks.json").unwrap_or_else(|e| panic!("{text}: {e}"));
    }

    #[test]
    fn a_mutex_locked_twice_by_its_thread_is_refused() {
        refused(
            r#"{"tasks": {"t0": {"loop": -1, "phases": {"p": {"lock": "m", "run": 10, "lock1": "m", "unlock": "m"}}}}}"#,
            &[
                "tasks.t0.phases.p.lock1: locks \"m\" while the thread already holds it (since tasks.t0.phases.p.lock)",
                "(line 1)",
            ],
        );
        // Locked on every iteration of a phase and never unlocked: the second iteration waits.
        refused(
            r#"{"tasks": {"t0": {"phases": {"p": {"loop": 3, "lock": "m", "run": 10}}}}}"#,
            &["tasks.t0.phases.p.lock: locks \"m\" while the thread already holds it"],
        );
        // The same across the task's loop over its phases.
        refused(
            r#"{"tasks": {"t0": {"loop": 2, "phases": {"a": {"lock": "m", "run": 10}, "b": {"run": 10}}}}}"#,
            &["tasks.t0.phases.a.lock: locks \"m\""],
        );
        // suspend and resume take the mutex of their name when there is one.
        refused(
            r#"{"tasks": {"t0": {"loop": -1, "lock": "q", "suspend": "q", "unlock": "q"},
                          "t1": {"loop": -1, "run": 10, "resume": "q"}}}"#,
            &["tasks.t0.suspend: suspends on \"q\", which takes the mutex of that name, while the thread already \
              holds it (since tasks.t0.lock)"],
        );
        // Locked in one phase and unlocked in the next, round after round: fine.
        accepted(
            r#"{"tasks": {"t0": {"loop": -1, "phases": {"a": {"lock": "m", "run": 10}, "b": {"run": 10, "unlock": "m"}}}}}"#,
        );
    }

    #[test]
    fn unlocking_a_mutex_not_held_is_refused() {
        refused(
            "{\"tasks\": {\"t0\": {\n  \"run\": 10,\n  \"unlock\": \"m\"}}}",
            &["tasks.t0.unlock: unlocks \"m\", which the thread does not hold: lock it first (line 3)"],
        );
        // Unlocked on every iteration, locked only once.
        refused(
            r#"{"tasks": {"t0": {"phases": {"a": {"lock": "m", "run": 10}, "b": {"loop": 2, "unlock": "m", "run": 10}}}}}"#,
            &["tasks.t0.phases.b.unlock: unlocks \"m\", which the thread does not hold"],
        );
        // pthread_cond_wait needs its mutex locked.
        refused(
            r#"{"tasks": {"t0": {"run": 10, "wait": {"ref": "c", "mutex": "m"}},
                          "t1": {"lock": "m", "signal": "c", "unlock": "m"}}}"#,
            &["tasks.t0.wait: waits on \"c\" with the mutex \"m\", which the thread does not hold"],
        );
    }

    #[test]
    fn opposite_lock_orders_between_tasks_are_refused() {
        let text = r#"{"tasks": {
            "a": {"loop": -1, "lock": "x", "lock1": "y", "run": 100, "unlock": "y", "unlock1": "x"},
            "b": {"loop": -1, "lock": "y", "lock1": "x", "run": 100, "unlock": "x", "unlock1": "y"}}}"#;
        refused(
            text,
            &[
                "tasks.b.lock1: takes \"x\" while holding \"y\", but tasks.a.lock1 (line 2) takes \"y\" while \
                 holding \"x\": a and b can deadlock",
                "(line 3)",
            ],
        );
        // Across phases, and with the inner mutex taken back by a condition wait.
        refused(
            r#"{"tasks": {
                "a": {"phases": {"p": {"lock": "x", "lock1": "y", "wait": {"ref": "c", "mutex": "y"}, "unlock": "y", "unlock1": "x"}}},
                "b": {"phases": {"q": {"lock": "y", "run": 10}, "r": {"lock": "x", "signal": "c", "unlock": "x", "unlock1": "y"}}}}}"#,
            &["tasks.b.phases.r.lock: takes \"x\" while holding \"y\"", "a and b can deadlock"],
        );
        // The same order everywhere is fine.
        accepted(
            r#"{"tasks": {
            "a": {"loop": -1, "lock": "x", "lock1": "y", "run": 100, "unlock": "y", "unlock1": "x"},
            "b": {"loop": -1, "lock": "x", "lock1": "y", "run": 100, "unlock": "y", "unlock1": "x"}}}"#,
        );
    }

    #[test]
    fn one_thread_cannot_deadlock_with_itself_but_two_of_its_instances_can() {
        let task = |instances: u32| {
            format!(
                r#"{{"tasks": {{"t": {{"instance": {instances}, "loop": -1, "phases": {{
                    "p": {{"lock": "x", "lock1": "y", "run": 10, "unlock": "y", "unlock1": "x"}},
                    "q": {{"lock": "y", "lock1": "x", "run": 10, "unlock": "x", "unlock1": "y"}}}}}}}}}}"#
            )
        };
        accepted(&task(1));
        refused(
            &task(2),
            &["tasks.t.phases.q.lock1: takes \"x\" while holding \"y\"", "two threads of t can deadlock"],
        );
    }

    #[test]
    fn a_circle_of_three_mutexes_is_refused() {
        refused(
            r#"{"tasks": {
            "a": {"loop": -1, "lock": "x", "lock1": "y", "run": 100, "unlock": "y", "unlock1": "x"},
            "b": {"loop": -1, "lock": "y", "lock1": "z", "run": 100, "unlock": "z", "unlock1": "y"},
            "c": {"loop": -1, "lock": "z", "lock1": "x", "run": 100, "unlock": "x", "unlock1": "z"}}}"#,
            &[
                "tasks.c.lock1: the mutexes are taken in a circle",
                "a takes \"y\" holding \"x\" (tasks.a.lock1, line 2)",
                "b takes \"z\" holding \"y\"",
                "c takes \"x\" holding \"z\"",
            ],
        );
    }
}

mod scale {
    use super::*;
    use std::fmt::Write;

    /// `tasks` threads on one line: each names its own condition, a shared mutex, a shared timer,
    /// a barrier and its neighbour, and forks a common template, so that every name is looked
    /// up across the whole file (what used to make reading quadratic). Three log slots each.
    fn big_file(tasks: usize) -> String {
        let mut s = String::from(r#"{"global": {"duration": 1, "calibration": "CPU0"}, "tasks": {"#);
        for i in 0..tasks {
            let (m, next) = (i % 100, (i + 1) % tasks);
            write!(
                s,
                r#""thread-{i}": {{"loop": -1, "phases": {{"p": {{"lock": "mutex-{m}", "signal": "cond-{i}", "unlock": "mutex-{m}", "resume": "thread-{next}", "suspend": "thread-{i}", "barrier": "barrier-{m}", "timer": {{"ref": "tick-{m}", "period": 10000}}}}, "p": {{"sleep": 100, "fork": "w"}}}}}}, "#
            )
            .unwrap();
        }
        s.push_str(r#""w": {"instance": 0, "loop": 1, "run": 10}}}"#);
        s
    }

    #[test]
    fn a_five_megabyte_file_is_read() {
        let n = 20_000;
        let text = big_file(n);
        assert!(text.len() > 5_000_000 && !text.contains('\n'), "{}", text.len());
        let rtapp = RtApp::parse(&text, "rt-app big.json").unwrap_or_else(|e| panic!("{e}"));
        // Two phases per thread (the second named "p1", as workgen renames it), plus w's.
        assert_eq!(rtapp.layout().phases.len(), 2 * n + 1);
        assert_eq!(rtapp.layout().phases[1].phase, "p1");
        let plat = Platform::from_json(&common::preset(JUNO), JUNO).unwrap();
        assert_eq!(rtapp.tasks(&plat).len(), n);
    }

    /// A recorded task replayed (`trace:FILE`) is one phase with a run event per recorded run:
    /// more than 65,535 of them (one log slot each) run, each timed.
    #[test]
    fn a_thread_with_seventy_thousand_run_events_runs() {
        let n = 70_000;
        let mut s = String::from(
            r#"{"global": {"duration": -1, "calibration": "CPU1"}, "tasks": {"t": {"loop": 1, "cpus": [1], "phases": {"replay": {"loop": 1"#,
        );
        for i in 0..n {
            write!(s, r#", "run_{}": 10, "sleep_{}": 10"#, 2 * i, 2 * i + 1).unwrap();
        }
        s.push_str("}}}}}");
        let rtapp = RtApp::parse(&s, "rt-app long.json").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rtapp.layout().slots.len(), n + 1);
        let (r, log) = run(JUNO, PERF, &s, 2.0);
        assert!(r.summary.sim_time_s > 1.3, "{}", r.summary.sim_time_s);
        // Every run event was timed, at the calibration CPU's speed (the task is pinned there).
        assert!(near(log.run_stretch, 1.0, 0.05), "{}", log.run_stretch);
    }
}

/// A late activation does not sleep: rt-app's timer event (src/rt-app.c, `run_event`, case
/// `rtapp_timer`) sleeps only while the next release is ahead, so a task that overruns its
/// period keeps its CPU busy. The kernel then sees an always-running task, and schedutil
/// (sugov_update_single, kernel/sched/cpufreq_schedutil.c) raises the frequency.
mod late_timers {
    use super::*;

    /// The busiest CPU's busy share (%).
    fn busiest(r: &SimResult) -> f64 {
        r.summary.per_cpu.iter().map(|c| c.busy_pct).fold(0.0, f64::max)
    }

    /// A task asking 99 % of its CPU at the maximum frequency on a machine with one CPU per
    /// policy (haswell: 3.1 GHz max, 2.3 GHz base, the periodic workload's unit of work).
    #[test]
    fn an_overrunning_99_percent_periodic_task_keeps_its_cpu_busy() {
        // 9.9 ms at 3.1 GHz is 13.343 ms at base. The built-in periodic workload releases on an
        // absolute grid: a late activation starts at once. Before, it waited for the next grid
        // point, and the CPU read far less busy than the task asks.
        let run_us = 9_900.0 * 3_100.0 / 2_300.0;
        let spec = format!("periodic:run_us={run_us:.0},period_us=10000");
        let r = common::run("haswell-e5-2670v3-2s", "schedutil", &spec, 2.0, 1);
        assert!(busiest(&r) > 97.0, "busy {:.1} %", busiest(&r));
    }

    #[test]
    fn an_overrunning_99_percent_rtapp_task_keeps_its_cpu_busy_in_both_modes() {
        for mode in ["relative", "absolute"] {
            let text = format!(
                r#"{{"global": {{"calibration": 100}}, "tasks": {{"t": {{"run": 99000, "timer": {{"ref": "unique", "period": 100000, "mode": "{mode}"}}}}}}}}"#
            );
            let (r, _) = run("haswell-e5-2670v3-2s", "schedutil", &text, 2.0);
            assert!(busiest(&r) > 97.0, "{mode}: busy {:.1} %", busiest(&r));
        }
    }
}
