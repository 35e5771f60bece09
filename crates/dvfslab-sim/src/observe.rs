//! Timelines recorded only when asked: one row per change, as columns ready for a DataFrame.

use crate::engine::TimeNs;
use crate::sched::waker::WakeContext;

#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// Order of recording across all kinds, so events at the same nanosecond keep their order.
    pub seq: u64,
    pub freq_seq: Vec<u64>,
    pub idle_seq: Vec<u64>,
    pub switch_seq: Vec<u64>,
    pub wakeup_seq: Vec<u64>,
    pub freq_time_ns: Vec<u64>,
    pub freq_cpu: Vec<u32>,
    pub freq_khz: Vec<u32>,
    pub util_time_ns: Vec<u64>,
    pub util_cpu: Vec<u32>,
    pub util_avg: Vec<u32>,
    pub idle_time_ns: Vec<u64>,
    pub idle_cpu: Vec<u32>,
    pub idle_state: Vec<String>,
    /// Context switches: on `cpu`, `prev` (-1 = idle) stops and `next` (-1 = idle) runs;
    /// `prev_state` is 'R' (preempted), 'S' (slept), 'D' (waited on a device), 'Z' (exited, a
    /// zombie until its parent reaps it), 'X' (exited, released at once) or 'I' (idle).
    pub switch_time_ns: Vec<u64>,
    pub switch_cpu: Vec<u32>,
    pub switch_prev: Vec<i64>,
    pub switch_prev_state: Vec<char>,
    pub switch_next: Vec<i64>,
    /// Wake-ups: `task` made runnable on `cpu`, logged on `logged_cpu`: the CPU whose code
    /// enqueued it (the waker's, unless the target's wake list took it).
    pub wakeup_time_ns: Vec<u64>,
    pub wakeup_task: Vec<u32>,
    pub wakeup_cpu: Vec<u32>,
    pub wakeup_logged_cpu: Vec<u32>,
    /// The wake-up asked the logging CPU's running task to reschedule (`N` in the row's flags).
    pub wakeup_need_resched: Vec<bool>,
    /// sched_waking: on `cpu` (the waker's), with `waker` current there (-1 = idle) and the
    /// context it ran in, `task` is about to be woken; `prev_cpu` is where it slept.
    pub waking_seq: Vec<u64>,
    pub waking_time_ns: Vec<u64>,
    pub waking_cpu: Vec<u32>,
    pub waking_task: Vec<u32>,
    pub waking_prev_cpu: Vec<u32>,
    pub waking_waker: Vec<i64>,
    pub waking_context: Vec<WakeContext>,
    /// Process life: on `cpu`, `task` forked `child` ('F', `child` its new task), exec'd ('E')
    /// or exited ('X'); -1 where there is no child.
    pub process_seq: Vec<u64>,
    pub process_time_ns: Vec<u64>,
    pub process_cpu: Vec<u32>,
    pub process_kind: Vec<char>,
    pub process_task: Vec<u32>,
    pub process_child: Vec<i64>,
    /// Migrations (sched_migrate_task): `task` moves from `src` to `dst`, logged on `cpu`, the
    /// CPU whose code moves it (set_task_cpu's caller: the waker's for a wake-up's placement,
    /// the balancing CPU for a pull, the source's stopper for an active balance or an exec), in
    /// its context (the flags column's third character).
    pub migrate_seq: Vec<u64>,
    pub migrate_time_ns: Vec<u64>,
    pub migrate_cpu: Vec<u32>,
    pub migrate_task: Vec<u32>,
    pub migrate_src: Vec<u32>,
    pub migrate_dst: Vec<u32>,
    pub migrate_context: Vec<WakeContext>,
    /// sched_stat_runtime: `task` was charged `ns` of runtime (update_curr; fair tasks only, as
    /// the kernel logs it), logged on `cpu`: its own CPU's, or a waker's that enqueued a task
    /// on that CPU's run-queue.
    pub runtime_seq: Vec<u64>,
    pub runtime_time_ns: Vec<u64>,
    pub runtime_cpu: Vec<u32>,
    pub runtime_task: Vec<u32>,
    pub runtime_ns: Vec<u64>,
    /// powernv global (voltage) P-state changes, by the first CPU of the policy.
    pub global_time_ns: Vec<u64>,
    pub global_cpu: Vec<u32>,
    pub global_khz: Vec<u32>,
    /// Task names by id (pid = id + 1 in traces).
    pub task_names: Vec<String>,
    /// The kernel's prio of each task by id, as sched_switch prints it: 120 + nice for a fair
    /// task, 99 − its priority for an RT one.
    pub task_prios: Vec<i32>,
    /// Places in the order kept for a CPU's next switch (`reserve_switch`), by CPU.
    reserved_switch_seq: Vec<(u32, u64)>,
    /// By CPU, the earliest time its next event may carry (`hold_until`).
    cpu_floor: Vec<TimeNs>,
}

impl Timeline {
    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// The time an event of `cpu` at `t` is logged at: never before the CPU's floor.
    fn stamp(&self, cpu: usize, t: TimeNs) -> TimeNs {
        self.cpu_floor.get(cpu).map_or(t, |&floor| t.max(floor))
    }

    /// Log `cpu`'s events from now on no earlier than `t`. A CPU leaving an idle state runs
    /// nothing until the hardware is back (the state's exit latency): the kernel logs its
    /// `cpu_idle` exit, and the switch to the woken task, only then.
    pub fn hold_until(&mut self, cpu: usize, t: TimeNs) {
        if self.cpu_floor.len() <= cpu {
            self.cpu_floor.resize(cpu + 1, 0);
        }
        self.cpu_floor[cpu] = self.cpu_floor[cpu].max(t);
    }

    pub fn frequency(&mut self, t: TimeNs, cpu: usize, khz: u32) {
        let seq = self.next_seq();
        self.freq_seq.push(seq);
        self.freq_time_ns.push(self.stamp(cpu, t));
        self.freq_cpu.push(cpu as u32);
        self.freq_khz.push(khz);
    }

    pub fn util(&mut self, t: TimeNs, cpu: usize, util: u64) {
        self.util_time_ns.push(self.stamp(cpu, t));
        self.util_cpu.push(cpu as u32);
        self.util_avg.push(util as u32);
    }

    /// Keep the next place in the order for `cpu`'s next switch, recorded later: an active
    /// migration takes the task off its source CPU (the stopper preempts it there,
    /// migration_cpu_stop in kernel/sched/core.c) before the destination runs it, so the
    /// source's switch-out comes first in a trace although the source picks its next task after.
    pub fn reserve_switch(&mut self, cpu: usize) {
        let seq = self.next_seq();
        self.reserved_switch_seq.push((cpu as u32, seq));
    }

    /// A context switch. Rows are in recording order, and `seq` gives the order of events of
    /// the same nanosecond (a reserved place can put a row before the one recorded before it).
    pub fn switch(&mut self, t: TimeNs, cpu: usize, prev: Option<usize>, prev_state: char, next: Option<usize>) {
        let reserved = self.reserved_switch_seq.iter().position(|&(c, _)| c == cpu as u32);
        let seq = match reserved {
            Some(i) => self.reserved_switch_seq.swap_remove(i).1,
            None => self.next_seq(),
        };
        self.switch_seq.push(seq);
        self.switch_time_ns.push(self.stamp(cpu, t));
        self.switch_cpu.push(cpu as u32);
        self.switch_prev.push(prev.map_or(-1, |p| p as i64));
        self.switch_prev_state.push(prev_state);
        self.switch_next.push(next.map_or(-1, |n| n as i64));
    }

    /// Take back `cpu`'s last switch, to `next`, which never happened after all (a pick made
    /// again before the CPU ran anything, `Sim::pick_on_waking_cpu`): its task switched out
    /// and that task's state, for the switch that replaces it. None when there is no such
    /// record.
    pub fn retract_switch(&mut self, cpu: usize, next: usize) -> Option<Option<(usize, char)>> {
        let i = self.switch_cpu.iter().rposition(|&c| c == cpu as u32)?;
        if self.switch_next[i] != next as i64 {
            return None;
        }
        self.switch_seq.remove(i);
        self.switch_time_ns.remove(i);
        self.switch_cpu.remove(i);
        let prev = self.switch_prev.remove(i);
        let state = self.switch_prev_state.remove(i);
        self.switch_next.remove(i);
        Some(usize::try_from(prev).ok().map(|p| (p, state)))
    }

    pub fn global(&mut self, t: TimeNs, cpu: usize, khz: u32) {
        self.global_time_ns.push(self.stamp(cpu, t));
        self.global_cpu.push(cpu as u32);
        self.global_khz.push(khz);
    }

    pub fn wakeup(&mut self, t: TimeNs, task: usize, cpu: usize, logged_cpu: usize, need_resched: bool) {
        let seq = self.next_seq();
        self.wakeup_seq.push(seq);
        self.wakeup_time_ns.push(t);
        self.wakeup_task.push(task as u32);
        self.wakeup_cpu.push(cpu as u32);
        self.wakeup_logged_cpu.push(logged_cpu as u32);
        self.wakeup_need_resched.push(need_resched);
    }

    pub fn waking(
        &mut self,
        t: TimeNs,
        cpu: usize,
        task: usize,
        prev_cpu: usize,
        waker: Option<usize>,
        context: WakeContext,
    ) {
        let seq = self.next_seq();
        self.waking_seq.push(seq);
        self.waking_time_ns.push(self.stamp(cpu, t));
        self.waking_cpu.push(cpu as u32);
        self.waking_task.push(task as u32);
        self.waking_prev_cpu.push(prev_cpu as u32);
        self.waking_waker.push(waker.map_or(-1, |w| w as i64));
        self.waking_context.push(context);
    }

    /// A fork ('F', with its child), an exec ('E') or an exit ('X') of `task` on `cpu`.
    pub fn process(&mut self, t: TimeNs, cpu: usize, kind: char, task: usize, child: Option<usize>) {
        let seq = self.next_seq();
        self.process_seq.push(seq);
        self.process_time_ns.push(self.stamp(cpu, t));
        self.process_cpu.push(cpu as u32);
        self.process_kind.push(kind);
        self.process_task.push(task as u32);
        self.process_child.push(child.map_or(-1, |c| c as i64));
    }

    /// `task` moved from `src` to `dst` by code running on `cpu`.
    pub fn migrate(&mut self, t: TimeNs, cpu: usize, task: usize, src: usize, dst: usize, context: WakeContext) {
        let seq = self.next_seq();
        self.migrate_seq.push(seq);
        self.migrate_time_ns.push(self.stamp(cpu, t));
        self.migrate_cpu.push(cpu as u32);
        self.migrate_task.push(task as u32);
        self.migrate_src.push(src as u32);
        self.migrate_dst.push(dst as u32);
        self.migrate_context.push(context);
    }

    /// update_curr charged `task` `ns` of runtime, logged on `cpu`.
    pub fn runtime(&mut self, t: TimeNs, cpu: usize, task: usize, ns: u64) {
        let seq = self.next_seq();
        self.runtime_seq.push(seq);
        self.runtime_time_ns.push(self.stamp(cpu, t));
        self.runtime_cpu.push(cpu as u32);
        self.runtime_task.push(task as u32);
        self.runtime_ns.push(ns);
    }

    pub fn idle(&mut self, t: TimeNs, cpu: usize, state: &str) {
        let seq = self.next_seq();
        self.idle_seq.push(seq);
        self.idle_time_ns.push(self.stamp(cpu, t));
        self.idle_cpu.push(cpu as u32);
        self.idle_state.push(state.to_string());
    }
}

/// One frequency decision of a governor and what came of it (`--explain`).
#[derive(Clone, Debug)]
pub struct Decision {
    pub time_ns: TimeNs,
    pub policy: usize,
    /// What the governor computed, before the table and the limits.
    pub raw_khz: u32,
    /// The table entry the driver chose within [min_khz, max_khz].
    pub resolved_khz: u32,
    pub min_khz: u32,
    pub max_khz: u32,
    /// What the hardware runs once the transition is done (turbo bins and power limit applied).
    pub hw_khz: u32,
    /// The governor's inputs: utilisation and its parts, headroom, boosts, rate-limit state...
    pub inputs: Vec<(&'static str, f64)>,
}

/// One idle-state choice and what it was made from (`--explain`): what menu_select reads
/// (`hw/cpuidle/menu.rs`).
#[derive(Clone, Debug, PartialEq)]
pub struct IdleDecision {
    pub time_ns: TimeNs,
    pub cpu: usize,
    /// The soonest timer due on the CPU, absolute, if any.
    pub next_timer_ns: Option<TimeNs>,
    pub nr_iowait: u32,
    /// The governor's recent idle periods (µs), newest first, and its running average (ns).
    pub intervals_us: [u32; 8],
    pub avg_ns: Option<u64>,
    pub state: usize,
    pub reconsider_at_ns: Option<TimeNs>,
}

/// A record of a task moved by placement or balancing, kept with `--explain`.
#[derive(Clone, Debug, PartialEq)]
pub struct Migration {
    pub time_ns: TimeNs,
    pub task: usize,
    pub src_cpu: usize,
    pub dst_cpu: usize,
    /// `eas` (find_energy_efficient_cpu), `wakeup` (wake-up placement), `misfit` (tick of the
    /// misfit CPU), `misfit_idle` (pulled by a bigger CPU going idle), `push`, `pull`, `active`
    /// (a running task moved to an idle CPU after failed balancing), `spread`.
    pub reason: &'static str,
    /// task_util_est (max of util_avg and util_est) when the decision was made.
    pub util: u64,
    /// Whether that util fitted the source CPU (util_fits_cpu > 0 with the task's clamps).
    pub fitted_src: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reserved_switch_keeps_its_earlier_place_in_the_order() {
        let mut tl = Timeline::default();
        tl.reserve_switch(3);
        tl.switch(10, 5, None, 'I', Some(1));
        tl.switch(10, 3, Some(1), 'R', None);
        assert_eq!(tl.switch_cpu, vec![5, 3]);
        assert!(tl.switch_seq[1] < tl.switch_seq[0]);
        // Used once: the next switch of CPU 3 takes a new place.
        tl.switch(20, 3, None, 'I', Some(2));
        assert!(tl.switch_seq[2] > tl.switch_seq[0]);
    }

    fn timeline_of(platform: &str, workload: &str, duration_ns: u64) -> Timeline {
        let path = format!("{}/../../python/dvfslab/data/platforms/{platform}.json", env!("CARGO_MANIFEST_DIR"));
        let json = std::fs::read_to_string(&path).unwrap();
        let cfg = crate::SimConfig {
            governor: "schedutil".into(),
            workload: workload.into(),
            duration_ns: Some(duration_ns),
            seed: 1,
            timeline: true,
            ..crate::SimConfig::default()
        };
        crate::simulate(&json, platform, &cfg).unwrap().timeline.unwrap()
    }

    #[test]
    fn an_idle_exit_is_logged_once_the_hardware_is_back() {
        // The woken CPU runs nothing during its idle state's exit latency: the kernel traces
        // cpu_idle's exit, and the switch to the woken task, when the hardware is back.
        let platform = "skylake-e3-1240v5";
        let tl = timeline_of(platform, "periodic:threads=2,run_us=500,period_us=20000", 200_000_000);
        let path = format!("{}/../../python/dvfslab/data/platforms/{platform}.json", env!("CARGO_MANIFEST_DIR"));
        let plat = crate::Platform::from_json(&std::fs::read_to_string(&path).unwrap(), platform).unwrap();
        let slowest_exit_ns =
            plat.cluster(0).idle_states.iter().map(|s| s.exit_latency_us as u64 * 1000).max().unwrap();
        let mut gaps = Vec::new();
        for i in (0..tl.idle_state.len()).filter(|&i| tl.idle_state[i] == "C0") {
            let cpu = tl.idle_cpu[i];
            let woken = (0..tl.wakeup_seq.len())
                .filter(|&j| tl.wakeup_cpu[j] == cpu && tl.wakeup_seq[j] < tl.idle_seq[i])
                .max_by_key(|&j| tl.wakeup_seq[j]);
            if let Some(j) = woken {
                gaps.push(tl.idle_time_ns[i] - tl.wakeup_time_ns[j]);
            }
        }
        assert!(gaps.iter().any(|&g| g > 0), "every exit logged at its wake-up");
        assert!(gaps.iter().all(|&g| g <= slowest_exit_ns), "{gaps:?}");
        // A CPU's own events keep their order in time.
        let mut rows: Vec<(u64, u32, u64)> = Vec::new();
        rows.extend((0..tl.switch_seq.len()).map(|i| (tl.switch_seq[i], tl.switch_cpu[i], tl.switch_time_ns[i])));
        rows.extend((0..tl.idle_seq.len()).map(|i| (tl.idle_seq[i], tl.idle_cpu[i], tl.idle_time_ns[i])));
        rows.extend((0..tl.freq_seq.len()).map(|i| (tl.freq_seq[i], tl.freq_cpu[i], tl.freq_time_ns[i])));
        rows.sort_unstable();
        let mut last = std::collections::HashMap::new();
        for (seq, cpu, t) in rows {
            let before = last.insert(cpu, t).unwrap_or(0);
            assert!(t >= before, "cpu{cpu}: event {seq} at {t} after one at {before}");
        }
    }

    #[test]
    fn every_cpu_has_its_frequency_at_time_zero_before_any_change() {
        let tl = timeline_of("juno-r2", "periodic:threads=2", 20_000_000);
        let first: Vec<(u64, u32)> = tl.freq_time_ns.iter().zip(&tl.freq_cpu).take(6).map(|(&t, &c)| (t, c)).collect();
        assert_eq!(first, (0..6).map(|c| (0, c)).collect::<Vec<_>>());
        // LITTLE CPUs (0, 3-5) start at their lowest OPP, 450 MHz; big ones (1-2) at 600 MHz.
        assert_eq!(&tl.freq_khz[..6], &[450_000, 600_000, 600_000, 450_000, 450_000, 450_000]);
    }

    #[test]
    fn a_cpu_switches_to_idle_before_it_enters_an_idle_state_and_leaves_it_before_the_switch() {
        // Kernel order: __schedule traces sched_switch to the idle task, whose do_idle then
        // traces cpu_idle (kernel/sched/idle.c); on a wake-up the CPU leaves the state
        // (cpu_idle exit) before schedule_idle switches to the woken task.
        let tl = timeline_of("juno-r2", "periodic:threads=2", 200_000_000);
        let mut idle_entries = 0;
        for (i, (state, &cpu)) in tl.idle_state.iter().map(String::as_str).zip(&tl.idle_cpu).enumerate() {
            let (t, seq) = (tl.idle_time_ns[i], tl.idle_seq[i]);
            let same = |j: usize| tl.switch_cpu[j] == cpu && tl.switch_time_ns[j] == t;
            let switch = (0..tl.switch_seq.len()).find(|&j| same(j));
            match (state, switch) {
                ("C0", Some(j)) => assert!(seq < tl.switch_seq[j] && tl.switch_next[j] >= 0),
                (_, Some(j)) if tl.switch_next[j] < 0 => {
                    idle_entries += 1;
                    assert!(seq > tl.switch_seq[j], "idle entry on cpu{cpu} at {t} before its switch");
                }
                _ => {}
            }
        }
        assert!(idle_entries > 10);
    }

    #[test]
    fn an_active_migration_switches_out_on_the_source_before_the_destination_switches_in() {
        // A single busy task starts on a LITTLE CPU of pixel6 and is moved to a bigger CPU by
        // misfit active balance (the stopper preempts it on the source first).
        let tl = timeline_of("pixel6", "cpu-bound:threads=1", 300_000_000);
        let n = tl.switch_seq.len();
        let mut migrations = 0;
        for i in 0..n {
            let (Some(task), 'R') = (u64::try_from(tl.switch_prev[i]).ok(), tl.switch_prev_state[i]) else { continue };
            // The destination may log its switch-in later, once out of its idle state.
            let (t, exit_window) = (tl.switch_time_ns[i], 2_000_000);
            let moved_in = (0..n).find(|&j| {
                (t..=t + exit_window).contains(&tl.switch_time_ns[j])
                    && tl.switch_cpu[j] != tl.switch_cpu[i]
                    && tl.switch_next[j] == task as i64
            });
            if let Some(j) = moved_in {
                migrations += 1;
                assert!(
                    tl.switch_seq[i] < tl.switch_seq[j],
                    "switch-in on cpu{} before the switch-out",
                    tl.switch_cpu[j]
                );
            }
        }
        assert!(migrations > 0);
    }
}
