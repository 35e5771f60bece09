//! A CPU's idle entry: the idle governor's choice from what the scheduler knows (the next
//! timer, the tick), the state set on the hardware, and the deeper state an idle CPU goes to
//! when its short idle history no longer holds.

use crate::engine::Event;
use crate::governor::UpdateFlags;
use crate::hw::cpuidle::{deepest_within, IdleChoice, IdleInputs};
use crate::observe::IdleDecision;
use crate::sched::detach_task_avg;
use crate::sched::pelt::LOAD_AVG_MAX;
use crate::sim::Sim;

impl Sim {
    pub(crate) fn go_idle(&mut self, cpu: usize) {
        let now = self.q.now();
        if self.sched.groups {
            // put_prev_entity at the root: no entity runs there any more.
            self.sched.root_set_next(&self.q, cpu, None);
        }
        self.update_cpu_pelt(cpu);
        // nohz_newidle_balance: going idle, a CPU has the blocked averages of idle CPUs
        // brought up to date (update_blocked_averages, from do_idle), its own among them,
        // which takes off what left it (a task that died here) and calls the governor. The kernel does so at most every 32 ms and after idle periods
        // averaging above the migration cost; the model at every idle entry.
        if let Some(gone) = self.sched.cpus[cpu].removed.take() {
            detach_task_avg(&mut self.sched.cpus[cpu].avg, &gone);
            self.sched.cpus[cpu].util_changed = true;
            self.cfs_util_change(cpu, UpdateFlags::default());
        }
        // A CPU saturated until now would have had no idle time at full capacity: the gap
        // between its task clock and its slower PELT clock is dropped (update_idle_rq_clock_pelt).
        let saturated = ((LOAD_AVG_MAX - 1024) << 10) - LOAD_AVG_MAX;
        let c = &mut self.sched.cpus[cpu];
        if c.avg.util_sum >= saturated {
            c.lost_idle += c.clock_task - c.clock_pelt;
        }
        c.clock_pelt = c.clock_task;
        c.idle_entered = now;
        // sched_balance_newidle brings the next balance forward (`sim/softirq.rs`).
        c.balance.idled = true;
        self.sched.account_busy_idle(&self.q, cpu);
        self.sync_counters(cpu);
        let choice = self.select_idle_state(cpu);
        let state = choice.state;
        self.set_idle_state(cpu, Some(state));
        let c = &mut self.sched.cpus[cpu];
        // Every idle entry is an idle call, as before 4.17; see docs/model.md for why the
        // later rule (only idle periods that stop the tick) is not simulated.
        c.idle_calls += 1;
        c.tick_token = c.tick_token.wrapping_add(1);
        c.tick_armed = false;
        // A shallow state chosen on a short history is left at the retained tick that makes
        // the idle governor give up on it; the tick handler finds the CPU idle and deepens it.
        if let Some(at) = choice.reconsider_at {
            let token = c.tick_token;
            self.q.push(at, Event::Tick { cpu: cpu as u32, token });
        }
        c.stall_until = 0;
        c.stall_charged_from = 0;
        let core = self.machine.plat.cpus[cpu].core;
        self.hw.cores[core].busy_threads -= 1;
        self.core_changed(core, cpu);
        let prev = self.sched.cpus[cpu].switched_out.take();
        if let Some(tl) = self.run.timeline(&mut self.sched.charges) {
            // The switch to the idle task comes first; the idle task then enters the state
            // (do_idle → cpuidle_idle_call, kernel/sched/idle.c, traces cpu_idle).
            tl.switch(now, cpu, prev.map(|p| p.0), prev.map_or('I', |p| p.1), None);
            let name = &self.machine.plat.cluster_of_cpu(cpu).idle_states[state].name;
            tl.idle(now, cpu, name);
        }
    }

    /// The idle governor's choice for `cpu` going idle now (cpuidle_select; `hw/cpuidle/`).
    pub(crate) fn select_idle_state(&mut self, cpu: usize) -> IdleChoice {
        let next_timer = self.sched.next_timer(&self.q, cpu);
        let plat = &self.machine.plat;
        let inputs = IdleInputs {
            now: self.q.now(),
            next_timer,
            nr_iowait: self.sched.cpus[cpu].nr_iowait,
            kernel: self.machine.kernel,
            tick_ns: self.machine.tick_ns,
            states: &plat.cluster_of_cpu(cpu).idle_states,
            timing: plat.idle_timing_of_cpu(cpu),
        };
        let history = self.hw.idle_log.is_some().then(|| self.hw.idle_governor.history(cpu)).flatten();
        let choice = self.hw.idle_governor.select(cpu, &inputs);
        if let (Some(log), Some(h)) = (self.hw.idle_log.as_mut(), history) {
            log.push(IdleDecision {
                time_ns: inputs.now,
                cpu,
                next_timer_ns: next_timer,
                nr_iowait: inputs.nr_iowait,
                intervals_us: h.intervals_newest_first(),
                avg_ns: h.avg_ns(),
                state: choice.state,
                reconsider_at_ns: choice.reconsider_at,
            });
        }
        choice
    }

    /// An idle CPU that no longer trusts its short idle history (a retained tick found it
    /// still asleep, or its task was placed elsewhere) goes to the deepest state its own
    /// timers allow.
    pub(crate) fn deepen_idle(&mut self, cpu: usize) {
        let Some(old) = self.sched.cpus[cpu].idle_state else { return };
        let now = self.q.now();
        let until_timer = self.sched.next_timer(&self.q, cpu).map_or(u64::MAX, |t| t - now);
        let deepest = deepest_within(self.machine.plat.idle_timing_of_cpu(cpu), until_timer);
        if deepest <= old {
            return;
        }
        self.sched.account_busy_idle(&self.q, cpu);
        self.set_idle_state(cpu, Some(deepest));
        self.core_changed(self.machine.plat.cpus[cpu].core, cpu);
        if let Some(tl) = self.run.timeline(&mut self.sched.charges) {
            tl.idle(now, cpu, &self.machine.plat.cluster_of_cpu(cpu).idle_states[deepest].name);
        }
    }
}
