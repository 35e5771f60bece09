//! spawn: a shell loop that starts a program and waits for it, one program after another
//! (docs/workloads-compute.md): the process creation of UnixBench's spawn and execl tests and
//! of Doug Smythies' processes-a-second chains, without git's test scripts around it
//! (`gitsource`).
//!
//! ```text
//!   sh:      loop { cpu(shell); vfork; D until the exec; wait4 }
//!   program: cpu(child); exec [exec]; cpu(work); exit
//! ```
//!
//! dash starts a program with vfork: the shell sleeps in D until its child's exec releases it
//! (preempting the child on the CPU they share), then in wait4 until the child exits, whose
//! wake-up brings the shell back. With `fork=1` the shell forks instead (bash): it runs the
//! fork's tail after its child is queued, then sleeps in wait4. Fork balancing places each
//! child (`sched::fork_balance`): on an idle core if there is one, so the chain's work
//! gathers on the cores fork placement chooses, and a governor sees a busy CPU or several
//! half-busy ones according to the kernel version's rule. A guest whose kernel packs its
//! vCPUs keeps the child on the shell's vCPU instead (the platform's `vcpu_pack`).
//!
//! The costs are the recording's (`estimates::spawn`, a dash loop of `/bin/true` on the
//! 2-vCPU guest): the shell's own code per program, the child's from the vfork to its exec,
//! its exit, with the exec itself `kernel::EXEC_US` and the C library's CPUID exits charged
//! at the platform's cost (`Op::Exec`). `work_us` adds the program's own work.
//!
//! Metric: milliseconds per program (lower is better), the run's length over the programs
//! started. Operations (`model check`): execs.

use std::rc::Rc;

use super::estimates::{kernel, spawn as est, us_cycles};
use super::process;
use super::{measure, Better, Metric, Operations, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "spawn",
    description: "a shell loop starting a program and waiting for it, one after another",
    metric: "time_per_program",
    unit: "ms",
    better: Better::Lower,
    knobs: &[
        Knob::new("programs", "programs", 1000.0, 1.0, 1e7, "programs started, one after another").integer(),
        Knob::new("work_us", "us", 0.0, 0.0, 1e7, "each program's own work besides its start and exit, µs at 3 GHz"),
        Knob::new("fork", "", 0.0, 0.0, 1.0, "1: the shell forks (bash), 0: it vforks (dash, posix_spawn)").integer(),
        est::SHELL_US,
        kernel::FORK_US,
        kernel::EXEC_US,
    ],
    build: |k: &KnobValues| {
        let us = |knob: &Knob| us_cycles(k.get(knob.name));
        Box::new(Spawn {
            programs: k.get_u64("programs").max(1),
            work: us_cycles(k.get("work_us")),
            fork: k.get_u64("fork") == 1,
            shell: us(&est::SHELL_US),
            fork_cycles: us(&kernel::FORK_US),
            exec: us(&kernel::EXEC_US),
        })
    },
};

/// Counters: programs waited for (the metric's progress); programs exec'd (the operations).
const PROGRESS: u16 = 0;
const EXECS: u16 = 1;
/// The channel the child's exec releases a vfork'ing shell on.
const VFORK: u32 = 0;
/// The program's comm after its exec: the recording's.
const COMM: &str = "true";

struct Spawn {
    programs: u64,
    /// Cycles: the program's own work, the shell's per program, a fork, an exec.
    work: f64,
    fork: bool,
    shell: f64,
    fork_cycles: f64,
    exec: f64,
}

fn cpu(cycles: f64) -> Op {
    Op::Run { cycles: Amount::Fixed(cycles), mem_frac: est::MEM_FRAC }
}

impl Spawn {
    /// The shell's ops for one program, ending where the next begins.
    fn shell_turn(&self) -> Vec<Op> {
        let mut sh = vec![cpu(self.shell)];
        if self.fork {
            // fork: the tail after the child is queued, then wait4 in S.
            sh.extend(process::fork(0, self.fork_cycles, est::MEM_FRAC));
            sh.push(Op::WaitChildren);
        } else {
            // vfork: D until the exec, the return from the vfork, then wait4 in S. As in
            // gitsource, `kernel::VFORK_CYCLES` holds the return (the recorded shell's CPU
            // from one vfork to the next is the vfork's 20 µs and its own code).
            let ret = kernel::VFORK_RETURN_CYCLES;
            sh.extend(process::vfork_wait(0, VFORK, kernel::VFORK_CYCLES - ret, ret, est::MEM_FRAC));
        }
        sh.push(Op::Mark(Mark::Add { counter: PROGRESS, amount: 1 }));
        sh
    }
}

impl Workload for Spawn {
    fn tasks(&self, _plat: &Platform) -> Vec<TaskSpec> {
        let mut sh = self.shell_turn();
        // `programs` is at most 10^7 (its knob's range).
        sh.extend([Op::Repeat { to: 0, times: self.programs as u32 }, Op::Exit]);
        vec![TaskSpec::new("sh", sh.into())]
    }

    fn programs(&self, _plat: &Platform) -> Vec<Rc<[Op]>> {
        let mut p = vec![cpu(est::CHILD_CYCLES)];
        if !self.fork {
            p.push(Op::Post { ch: VFORK, sync: false });
        }
        p.extend([
            Op::Exec { comm: COMM },
            Op::Mark(Mark::Add { counter: EXECS, amount: 1 }),
            cpu(self.exec + self.work),
            cpu(est::EXIT_CYCLES),
            Op::Exit,
        ]);
        vec![p.into()]
    }

    fn default_duration_ns(&self) -> u64 {
        // A cap: the run ends after the last program.
        3_600_000_000_000
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        let seconds = measure::elapsed_s(stats, PROGRESS as usize, self.programs);
        measure::metric(&INFO, seconds * 1e3 / self.programs as f64)
    }

    fn operations(&self, stats: &RunStats) -> Option<Operations> {
        Operations::counted(stats, EXECS, "execs")
    }
}
