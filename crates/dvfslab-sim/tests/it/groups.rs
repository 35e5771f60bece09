//! Task groups (`autogroup=1`, `sched/group.rs`): tbench's four pairs in one group on the
//! 2-vCPU guest, whose kernel threads (the preset's background, here made frequent so that
//! one soon sleeps ahead of the group) stay at the root. On 6.18 the group's entity, re-placed
//! at every change of its weight, keeps a kernel thread that slept ahead of it from ever
//! becoming eligible: the thread starves, and the root asks for a reschedule at every
//! accounting, so the clients are preempted more. Without groups neither happens.

use dvfslab_sim::observe::Timeline;
use dvfslab_sim::{simulate, SimConfig, SimResult};

use crate::common;

const RUN_S: f64 = 0.4;

fn run(autogroup: u32, kernel: &str, seed: u64) -> Result<SimResult, String> {
    let cfg = SimConfig {
        governor: format!("performance:kernel={kernel}"),
        workload: format!("tbench:clients=4,autogroup={autogroup},kthread_hz=300,kthread_us=40"),
        duration_ns: Some((RUN_S * 1e9) as u64),
        seed,
        timeline: true,
        ..SimConfig::default()
    };
    simulate(&common::preset("kvm-guest-2cpu"), "kvm-guest-2cpu", &cfg).map_err(|e| e.to_string())
}

/// The longest a kernel thread waited for its CPU after a wake-up, ns: to its switch-in, or
/// to the run's end if it never got one.
fn longest_kthread_wait(tl: &Timeline, end_ns: u64) -> u64 {
    let kthread = |task: u32| tl.task_names[task as usize].starts_with("kworker/");
    let mut longest = 0;
    for (&woken, &task) in tl.wakeup_time_ns.iter().zip(&tl.wakeup_task) {
        if !kthread(task) {
            continue;
        }
        let ran = tl
            .switch_time_ns
            .iter()
            .zip(&tl.switch_next)
            .find(|&(&t, &next)| t >= woken && next == i64::from(task))
            .map_or(end_ns, |(&t, _)| t);
        longest = longest.max(ran - woken);
    }
    longest
}

/// The share of the clients' switch-outs that were preemptions.
fn clients_preempted(tl: &Timeline) -> f64 {
    let client = |task: i64| task >= 0 && tl.task_names[task as usize].starts_with("tbench-");
    let outs: Vec<char> = tl
        .switch_prev
        .iter()
        .zip(&tl.switch_prev_state)
        .filter(|&(&prev, _)| client(prev))
        .map(|(_, &state)| state)
        .collect();
    outs.iter().filter(|&&s| s == 'R').count() as f64 / outs.len().max(1) as f64
}

#[test]
fn a_group_spread_over_the_cpus_starves_a_kernel_thread_that_slept_ahead_of_it() {
    let end_ns = (RUN_S * 1e9) as u64;
    let flat = run(0, "6.18", 0).unwrap();
    let grouped = run(1, "6.18", 0).unwrap();
    let flat_tl = flat.timeline.as_ref().unwrap();
    let grouped_tl = grouped.timeline.as_ref().unwrap();
    // Without groups a kernel thread waits at most a slice or so (1.4 ms on 2 CPUs).
    let flat_wait = longest_kthread_wait(flat_tl, end_ns);
    assert!(flat_wait < 3_000_000, "{flat_wait} ns");
    // With them one waits a large part of the run.
    let grouped_wait = longest_kthread_wait(grouped_tl, end_ns);
    assert!(grouped_wait > 50_000_000, "{grouped_wait} ns");
    // And the clients are preempted more often (the recording kernel: 38% of their
    // switch-outs in the starved state against 24% outside it, docs/recording.md).
    let (before, after) = (clients_preempted(flat_tl), clients_preempted(grouped_tl));
    assert!(after > before + 0.08, "{before:.3} -> {after:.3}");
    // The same seed gives the same run.
    let again = run(1, "6.18", 0).unwrap();
    assert_eq!(again.summary.metric.value, grouped.summary.metric.value);
    assert_eq!(again.timeline.unwrap().switch_time_ns, grouped_tl.switch_time_ns);
}

#[test]
fn task_groups_are_refused_on_kernels_whose_reweight_is_not_modelled() {
    for kernel in ["6.12", "5.15"] {
        let err = run(1, kernel, 0).err().expect("refused");
        assert!(err.contains("autogroup") && err.contains("6.14 to 6.18"), "{err}");
    }
    assert!(run(1, "6.14", 0).is_ok());
    let err = run(2, "6.18", 0).err().expect("refused");
    assert!(err.contains("autogroup: 2 is out of range [0, 1]"), "{err}");
}

/// pgbench's select-only pair on one CPU, its client and its backend each in a session of its
/// own (the backend starts one as every postmaster child does): with autogroup on or off, the
/// backend's reply wakes the client, which preempts the backend at once, so the backend runs
/// on to the next statement without sleeping. The recording kernel does so either way
/// (6.18.44, `taskset -c 0 pgbench -S -c 1 -j 1`: the backend preempted 25,465 times in a
/// second with autogroup on, 27,799 with it off, asleep a few hundred times in both). With
/// groups the client's entity, delayed at the root when it slept, wakes with the lag it slept
/// with, read before the backend's entity is accounted (requeue_delayed_entity); read after,
/// it is owed nothing, ties the backend's, and the pair falls into taking turns to sleep.
#[test]
fn single_task_groups_ping_pong_as_their_tasks_do() {
    let run = |autogroup: u32| {
        let cfg = SimConfig {
            governor: "performance:kernel=6.18".into(),
            workload: format!("pgbench:rw=0,clients=1,threads=1,cpumask=1,autogroup={autogroup}"),
            duration_ns: Some(100_000_000),
            timeline: true,
            ..SimConfig::default()
        };
        let r = simulate(&common::preset("kvm-guest-2cpu"), "kvm-guest-2cpu", &cfg).unwrap();
        let tl = r.timeline.unwrap();
        let backend = |task: i64| task >= 0 && tl.task_names[task as usize].starts_with("postgres-");
        let outs = |state: char| {
            tl.switch_prev.iter().zip(&tl.switch_prev_state).filter(|&(&p, &s)| backend(p) && s == state).count()
        };
        (outs('R'), outs('S'))
    };
    let (flat_preempted, flat_slept) = run(0);
    let (grouped_preempted, grouped_slept) = run(1);
    assert!(flat_preempted > 1_000 && flat_slept < flat_preempted / 100, "{flat_preempted} {flat_slept}");
    assert!(
        grouped_preempted > 1_000 && grouped_slept < grouped_preempted / 100,
        "{grouped_preempted} {grouped_slept}"
    );
    let ratio = grouped_preempted as f64 / flat_preempted as f64;
    assert!((0.9..1.1).contains(&ratio), "{grouped_preempted} against {flat_preempted}");
}
