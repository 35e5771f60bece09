//! gitsource: git's `make test`, a serialized chain of short-lived processes (docs/workloads-compute.md;
//! Doug Smythies' PIDs-per-second test is the same shape).
//!
//! One shell runs the commands one after another. For each it interprets a little script,
//! forks, and sleeps in wait4 until the child exits. Fork balancing puts each child on an
//! idle CPU, and exec balancing usually on another (the child's own new load weighs on the
//! first), where it starts with `util_avg` = half the spare capacity and lives about a
//! millisecond: non-invariant schedutil asks for `1.25 · f_cur · util/cap` from a low
//! `f_cur` and stays low, invariant schedutil asks for `1.25 · f_max · util/cap` at once.
//!
//! ```text
//!   sh: loop { cpu(w_parent); fork; wait4 }        child: exec; cpu(W_i); [write+fsync]; exit
//!   1 command in 10 is a pipeline of 2–3 children started together, joined by a pipe
//! ```
//!
//! `W_i` is lognormal (median 0.3 ms at ~4 GHz, σ 1.0), binned (see `sample`). fork is
//! charged to the shell, exec and exit to the child (`estimates::kernel`); the child notifies
//! the shell while still current, as `do_exit` does. The run ends after the last command.
//! The command's work, the shell's, fork and exec are knobs (`work_us`, `shell_us`, `fork_us`,
//! `exec_us`), their defaults and ranges declared in `estimates`.
//!
//! Metric: Elapsed in seconds (lower is better), the makespan of the chain. `commands` scales
//! the suite; the real `make test` starts about 3·10^5 processes. Shortcomings: no test-suite
//! structure (scripts, subshells, `make` above the scripts), children do not inherit the
//! shell's affinity (so Doug's "1cpu" pinned reference cannot be expressed yet).

use std::rc::Rc;

use super::estimates::{gitsource as est, kernel, us_cycles};
use super::{measure, pieces, sample, Better, Metric, Operations, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "gitsource",
    description: "git make test: serialized fork/exec chain of short shell commands",
    metric: "elapsed",
    unit: "s",
    better: Better::Lower,
    knobs: &[
        Knob::new(
            "commands",
            "processes",
            2000.0,
            1.0,
            1e7,
            "commands run by the shell; the full suite starts ~300000 processes",
        )
        .integer(),
        est::WORK_MEDIAN_US,
        est::PARENT_US,
        kernel::FORK_US,
        kernel::EXEC_US,
    ],
    build: |k: &KnobValues| {
        let us = |knob: &Knob| us_cycles(k.get(knob.name));
        let costs = Costs {
            work_median: us(&est::WORK_MEDIAN_US),
            shell: us(&est::PARENT_US),
            fork: us(&kernel::FORK_US),
            exec: us(&kernel::EXEC_US),
        };
        Box::new(Gitsource { commands: k.get_u64("commands") as usize, costs })
    },
};

/// Bins of the command work distribution.
const BINS: usize = 16;
/// Channels: the shell's SIGCHLD; pipe from the first stage; pipe from the middle stage.
const CHILD_CH: u32 = 0;
const PIPE1_CH: u32 = 1;
const PIPE2_CH: u32 = 2;
/// Counter 0: commands completed.
const PROGRESS: u16 = 0;

/// What one command is.
#[derive(Clone, Copy)]
enum Command {
    Single { bin: usize, io: bool },
    Pipe { bins: [usize; 3], stages: usize },
}

/// The program table: five kinds of child, each in every bin.
#[derive(Clone, Copy)]
enum Kind {
    Single = 0,
    SingleIo = 1,
    Head = 2,
    Middle = 3,
    Tail2 = 4,
    Tail3 = 5,
}

fn program(kind: Kind, bin: usize) -> u32 {
    (kind as usize * BINS + bin) as u32
}

struct Gitsource {
    commands: usize,
    costs: Costs,
}

/// The knobs' work, in cycles: the median of a command's own, the shell's per command, a
/// fork (charged to the shell) and an exec.
#[derive(Clone, Copy)]
struct Costs {
    work_median: f64,
    shell: f64,
    fork: f64,
    exec: f64,
}

/// Commands built at a time (see `pieces`).
const COMMANDS_PER_PIECE: usize = 8192;

/// `n` commands of piece `piece`: kinds and bins in a fixed shuffled order.
fn commands(n: usize, piece: usize) -> Vec<Command> {
    let salt = |s: u64| pieces::salt(s, piece);
    let bins = sample::layout(n, BINS, salt(1));
    let more = sample::layout(n, BINS, salt(2));
    let last = sample::layout(n, BINS, salt(3));
    let pipe = sample::flags(n, est::PIPE_FRAC, salt(4));
    let three = sample::flags(n, est::PIPE3_FRAC, salt(5));
    let io = sample::flags(n, est::IO_FRAC, salt(6));
    (0..n)
        .map(|i| {
            if pipe[i] {
                Command::Pipe { bins: [bins[i], more[i], last[i]], stages: if three[i] { 3 } else { 2 } }
            } else {
                Command::Single { bin: bins[i], io: io[i] }
            }
        })
        .collect()
}

/// The shell's part of one command: fork its children, wait for each, count it.
fn shell_command(sh: &mut Vec<Op>, cmd: Command, costs: &Costs) {
    let fork = |sh: &mut Vec<Op>, program: u32| {
        sh.extend([fixed(costs.fork), Op::Spawn { program, count: 1 }]);
    };
    sh.push(fixed(costs.shell));
    let children = match cmd {
        Command::Single { bin, io } => {
            fork(sh, program(if io { Kind::SingleIo } else { Kind::Single }, bin));
            1
        }
        Command::Pipe { bins, stages } => {
            fork(sh, program(Kind::Head, bins[0]));
            if stages == 3 {
                fork(sh, program(Kind::Middle, bins[1]));
                fork(sh, program(Kind::Tail3, bins[2]));
            } else {
                fork(sh, program(Kind::Tail2, bins[2]));
            }
            stages
        }
    };
    sh.extend((0..children).map(|_| Op::Wait { ch: CHILD_CH }));
    sh.push(Op::Mark(Mark::Add { counter: PROGRESS, amount: 1 }));
}

fn cpu(cycles: Amount) -> Op {
    Op::Run { cycles, mem_frac: est::MEM_FRAC }
}

fn fixed(cycles: f64) -> Op {
    cpu(Amount::Fixed(cycles))
}

/// A child: exec, `body`, exit after telling the shell. The model does not tell git from the
/// helpers a test script runs (sed, grep, test-tool): every command takes git's name.
fn child(body: Vec<Op>, exec_cycles: f64) -> Rc<[Op]> {
    let mut p = vec![Op::Exec { comm: "git" }, fixed(exec_cycles)];
    p.extend(body);
    p.extend([fixed(kernel::EXIT_CYCLES), Op::Post { ch: CHILD_CH, sync: false }, Op::Exit]);
    p.into()
}

impl Workload for Gitsource {
    fn tasks(&self, _plat: &Platform) -> Vec<TaskSpec> {
        let costs = self.costs;
        let sh = pieces::program(self.commands, COMMANDS_PER_PIECE, vec![Op::Exit], move |piece, steps, sh| {
            for cmd in commands(steps.len(), piece) {
                shell_command(sh, cmd, &costs);
            }
        });
        vec![TaskSpec::new("sh", sh)]
    }

    fn programs(&self, _plat: &Platform) -> Vec<Rc<[Op]>> {
        let work = sample::lognormal(BINS, self.costs.work_median, est::WORK_SIGMA_LOG);
        let child = |body| child(body, self.costs.exec);
        let half = |b: usize| cpu(sample::scaled(work[b], 0.5));
        let write =
            Op::Io { dev: 0, service_ns: Amount::Uniform(est::IO_NS.0, est::IO_NS.1), transfer_ns: Amount::ZERO };
        let mut p: Vec<Rc<[Op]>> = Vec::new();
        p.extend((0..BINS).map(|b| child(vec![cpu(work[b])])));
        p.extend((0..BINS).map(|b| child(vec![cpu(work[b]), write.clone()])));
        // Pipeline stages write half-way through their work and read before theirs.
        let pipe = |ch| Op::Post { ch, sync: true };
        p.extend((0..BINS).map(|b| child(vec![half(b), pipe(PIPE1_CH), half(b)])));
        p.extend((0..BINS).map(|b| child(vec![Op::Wait { ch: PIPE1_CH }, half(b), pipe(PIPE2_CH), half(b)])));
        p.extend((0..BINS).map(|b| child(vec![Op::Wait { ch: PIPE1_CH }, cpu(work[b])])));
        p.extend((0..BINS).map(|b| child(vec![Op::Wait { ch: PIPE2_CH }, cpu(work[b])])));
        p
    }

    fn devices(&self) -> Vec<super::DeviceSpec> {
        // A SATA SSD: one interrupt line (`Completion::CpuZero`).
        vec![super::DeviceSpec {
            name: "ssd".into(),
            queue_depth: 1,
            service: super::Service::Queued,
            completion: super::Completion::CpuZero,
        }]
    }

    fn default_duration_ns(&self) -> u64 {
        // A cap: the run ends after the last command.
        3_600_000_000_000
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        measure::metric(&INFO, measure::elapsed_s(stats, PROGRESS as usize, self.commands as u64))
    }

    fn operations(&self, stats: &RunStats) -> Option<Operations> {
        Operations::counted(stats, PROGRESS, "commands")
    }
}
