//! Tasks and the programs they run. A program is a list of operations with jumps, interpreted
//! one operation at a time; workloads build programs, the scheduler runs them.

use crate::engine::TimeNs;
use crate::pelt::{SchedAvg, UtilEst};

/// An amount drawn each time an operation runs: fixed, or uniform in `[lo, hi]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Amount {
    Fixed(f64),
    Uniform(f64, f64),
}

impl Amount {
    /// `mean` ± `jitter_pct` percent, uniform.
    pub fn jittered(mean: f64, jitter_pct: f64) -> Amount {
        if jitter_pct <= 0.0 {
            Amount::Fixed(mean)
        } else {
            let d = mean * jitter_pct / 100.0;
            Amount::Uniform((mean - d).max(0.0), mean + d)
        }
    }
}

/// One operation of a task program.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Execute `cycles` of work, counted in cycles at the cluster's base frequency. A fraction
    /// `mem_frac` of the time it takes at base frequency is memory stall that does not speed up
    /// with frequency.
    Run { cycles: Amount, mem_frac: f64 },
    /// Sleep for a duration (ns).
    Sleep { ns: Amount },
    /// Sleep until the next multiple of `period_ns` after the task's start (a periodic timer).
    /// `Mark::PeriodStart` is recorded at the wake-up.
    WaitPeriod { period_ns: u64 },
    /// Record a progress mark for the workload's metric.
    Mark(Mark),
    /// Continue at operation `to`.
    Jump { to: usize },
    /// The task exits.
    Exit,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// One unit of the workload's counter `n` completed.
    Count(u16),
    /// The end of a periodic activation: response time = now - activation.
    ActivationDone,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// On a runqueue, waiting or running.
    Runnable,
    /// Sleeping until a timer.
    Sleeping,
    Exited,
}

#[derive(Clone, Debug)]
pub struct Task {
    pub id: usize,
    pub name: String,
    pub program: std::rc::Rc<[Op]>,
    pub pc: usize,
    pub state: TaskState,
    pub cpu: usize,
    /// Work left in the current Run operation (cycles at base frequency).
    pub work_left: f64,
    pub mem_frac: f64,
    /// Work submitted and completed over the task's life, for the conservation check.
    pub work_submitted: f64,
    pub work_done: f64,
    pub vruntime: u64,
    /// When the task last started running (for vruntime and slice accounting).
    pub exec_start_ns: TimeNs,
    pub sum_exec_ns: u64,
    pub slice_start_exec_ns: u64,
    pub avg: SchedAvg,
    pub util_est: UtilEst,
    pub start_ns: TimeNs,
    pub activation_ns: TimeNs,
    pub timer_token: u32,
    pub weight: u64,
    /// Placed on a CPU once (the first wake-up is a fork: fork balancing and new-task util).
    pub placed: bool,
}

impl Task {
    pub fn new(id: usize, name: String, program: std::rc::Rc<[Op]>, start_ns: TimeNs) -> Task {
        Task {
            id,
            name,
            program,
            pc: 0,
            state: TaskState::Sleeping,
            cpu: 0,
            work_left: 0.0,
            mem_frac: 0.0,
            work_submitted: 0.0,
            work_done: 0.0,
            vruntime: 0,
            exec_start_ns: 0,
            sum_exec_ns: 0,
            slice_start_exec_ns: 0,
            avg: SchedAvg::default(),
            util_est: UtilEst::default(),
            start_ns,
            activation_ns: start_ns,
            timer_token: 0,
            weight: 1024,
            placed: false,
        }
    }
}
