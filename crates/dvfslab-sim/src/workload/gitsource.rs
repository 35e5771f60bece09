//! gitsource: git's `make test`, test scripts that each run a chain of short-lived processes
//! (docs/workloads-compute.md; a plain loop of one program, as Doug Smythies' tests run,
//! is `spawn`).
//!
//! A test script is a shell that runs its commands one after another. For each it interprets
//! a little script and starts a child: usually a program, with vfork (dash's `vfork`: the
//! shell sleeps in D until the child's exec releases it, then in wait4 until it exits),
//! sometimes a subshell (`$(...)` of builtins: a fork without exec whose output the shell
//! reads through a pipe). Fork balancing puts each child on an idle CPU, and exec balancing
//! usually on another, where it starts with `util_avg` = half the spare capacity and lives
//! about a millisecond: non-invariant schedutil asks for `1.25 · f_cur · util/cap` from a low
//! `f_cur` and stays low, invariant schedutil asks for `1.25 · f_max · util/cap` at once.
//!
//! ```text
//!   sh: loop { cpu(shell); vfork; D until exec; wait4 }     child: exec [exec]; cpu(W_k); exit
//!   11% of the children exec but are started with fork ($(cmd), pipelines): fork; wait4
//!   8% of the children are subshells: fork; read the pipe; wait4
//!   12% of the gits run a git (run_command): fork; read the exec-notify pipe; wait4
//! ```
//!
//! A parent that forks (not vforks) runs the fork's tail and its own code up to the read or
//! wait4 after its child is queued (`kernel::FORK_TAIL_CYCLES`) before it blocks in S.
//!
//! The programs and their mix are the recording's (`estimates::gitsource::COMMANDS`): git
//! (through its wrapper script, two execs), expr, test-tool, rm, perl and the other small
//! tools, each with its measured CPU. fork is charged to the shell, exec and exit to the
//! child (`estimates::kernel`). With `discard` a filesystem discards freed blocks
//! synchronously (ext4 without a journal mounted with `discard`, the recordings machine's):
//! git and rm then wait for those discards on the storage device, and so does the shell
//! before a tenth of its commands (its own redirection truncating a file), each dispatched by
//! the CPU's kblockd worker as the task sleeps (`kthreads`). A share of the commands that exec
//! (`est::EXIT_FLUSH_SHARE`) write a file back as they exit without waiting for it, whose
//! completion wakes ext4's end-I/O worker (`kthreads::end_io_worker`). `scripts` test scripts
//! run at once, each its share of the commands. The run ends after the last command.
//!
//! Metric: Elapsed in seconds (lower is better), the makespan of the chains. `commands` scales
//! the suite; the real `make test` starts about 3·10^5 processes. Operations (`model check`):
//! execs. Shortcomings: no pipelines between commands, no `make` above the scripts, children do
//! not inherit the shell's affinity (so Doug's "1cpu" pinned reference cannot be expressed yet).

use std::rc::Rc;

use super::estimates::{gitsource as est, kernel, us_cycles};
use super::kthreads;
use super::process;
use super::storage::{self, Access};
use super::{
    measure, pieces, sample, Better, DeviceSpec, Metric, Operations, RunStats, TaskSpec, Workload, WorkloadInfo,
};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "gitsource",
    description: "git make test: test scripts, each a serialized vfork/exec chain of short commands",
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
            "commands run by the test scripts; the full suite starts ~300000 processes",
        )
        .integer(),
        Knob::new("scripts", "scripts", 1.0, 1.0, 64.0, "test scripts running at once, each its share of the commands")
            .integer(),
        est::WORK_SCALE,
        est::PARENT_US,
        kernel::FORK_US,
        kernel::EXEC_US,
        storage::DISCARD,
        storage::knob(1.0),
    ],
    build: |k: &KnobValues| {
        let us = |knob: &Knob| us_cycles(k.get(knob.name));
        let costs = Costs {
            work_scale: k.get(est::WORK_SCALE.name),
            shell: us(&est::PARENT_US),
            fork: us(&kernel::FORK_US),
            exec: us(&kernel::EXEC_US),
        };
        Box::new(Gitsource {
            commands: k.get_u64("commands") as usize,
            scripts: k.get_u64("scripts").max(1) as usize,
            discard: k.get_u64(storage::DISCARD.name) == 1,
            device: k.get_u64("device"),
            costs,
        })
    },
};

/// Counters: commands completed (the metric's progress); programs exec'd (the operations).
const PROGRESS: u16 = 0;
const EXECS: u16 = 1;
/// The device discards wait on.
const DISK: u32 = 0;

#[derive(Clone, Copy)]
struct Gitsource {
    commands: usize,
    scripts: usize,
    discard: bool,
    device: u64,
    costs: Costs,
}

/// The knobs' work, in cycles (the commands' own as a factor): the shell's per command, a
/// fork (charged to the shell) and an exec.
#[derive(Clone, Copy)]
struct Costs {
    work_scale: f64,
    shell: f64,
    fork: f64,
    exec: f64,
}

/// Commands built at a time (see `pieces`).
const COMMANDS_PER_PIECE: usize = 8192;
/// Programs per script: two per command kind (with its discards rounded down, and one more)
/// started with vfork, the same two started with fork ([`FORKED`] on), then the subshell, then
/// the gits that run a git ([`GIT_PARENT`]: vfork'd, vfork'd with a discard more, fork'd,
/// fork'd with one more) and the gits they run ([`GIT_CHILD`], without and with one more);
/// then all of them again writing data back as they exit ([`WRITES`] on).
const WRITES: usize = 4 * est::COMMANDS.len() + 7;
const PER_SCRIPT: usize = 2 * WRITES;
const FORKED: usize = 2 * est::COMMANDS.len();
const SUBSHELL: usize = 4 * est::COMMANDS.len();
const GIT_PARENT: usize = SUBSHELL + 1;
const GIT_CHILD: usize = GIT_PARENT + 4;
/// git's place in [`est::COMMANDS`].
const GIT: usize = 0;

/// Who started a command, and how.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Parent {
    /// The script's shell, with vfork: the child's exec releases it.
    ShellVfork,
    /// The script's shell, with fork.
    ShellFork,
    /// A git (run_command: fork, exec, the notify pipe closed at the exec).
    Git,
}

/// How a shell starts program `child` of its script's programs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Start {
    /// vfork, then exec: the shell sleeps in D until the exec, then in wait4.
    Vfork,
    /// fork, then exec (`$(cmd)`, pipelines): the shell reads the output, then waits4, in S.
    ForkExec,
    /// fork without exec (`$(...)` of builtins): the shell reads the pipe, then wait4.
    Subshell,
}

fn start_of(child: usize) -> Start {
    match child % WRITES {
        SUBSHELL => Start::Subshell,
        c if c >= GIT_PARENT => {
            if c - GIT_PARENT >= 2 {
                Start::ForkExec
            } else {
                Start::Vfork
            }
        }
        c if c >= FORKED => Start::ForkExec,
        _ => Start::Vfork,
    }
}

fn cpu(cycles: f64) -> Op {
    Op::Run { cycles: Amount::Fixed(cycles), mem_frac: est::MEM_FRAC }
}

/// The shell's work for a command, `mean` cycles on average: most commands take a fraction of
/// it, a few (a test's body evaluated) many times it ([`est::SHELL_WORK`]).
fn shell_work(mean: f64) -> Op {
    Op::Run { cycles: Amount::Measured(&est::SHELL_WORK, mean / est::SHELL_WORK.mean()), mem_frac: est::MEM_FRAC }
}

/// Script `s`'s channels: its children's exec releases it on the first; its subshells write
/// to it on the second; a git's child closes its exec-notify pipe on the third.
fn vfork_ch(script: usize) -> u32 {
    3 * script as u32
}
fn pipe_ch(script: usize) -> u32 {
    3 * script as u32 + 1
}
fn notify_ch(script: usize) -> u32 {
    3 * script as u32 + 2
}

/// `n` children of piece `piece` of a script, as their programs' places in a script's
/// programs: a command kind in a fixed shuffled order, or a subshell; a kind with a fractional
/// count of discards takes its variant with one more for that share of its commands; a git
/// that runs a git takes its variant that does; [`est::EXIT_FLUSH_SHARE`] of the commands take
/// their variant that writes data back at exit.
fn children(n: usize, script: usize, piece: usize) -> Vec<usize> {
    let salt = |s: u64| pieces::salt(s ^ ((script as u64) << 48), piece);
    let subshell = sample::flags(n, est::SUBSHELL_SHARE, salt(1));
    // Of the children that exec, those started with fork.
    let forked = sample::flags(n, est::FORK_EXEC_SHARE / (1.0 - est::SUBSHELL_SHARE), salt(3));
    // Of the gits, those that run a git.
    let runs_git = sample::flags(n, est::GIT_RUNS_GIT, salt(4));
    // Of the children that exec, those that write data back as they exit.
    let writes = sample::flags(n, est::EXIT_FLUSH_SHARE, salt(6));
    // The kinds by their shares of the scripts' commands, a table of about 1000 slots.
    let slots = 1000.0;
    let mut table = Vec::with_capacity(slots as usize);
    for (k, c) in est::COMMANDS.iter().enumerate() {
        let share = if k == GIT { git_share_of_scripts() } else { c.share };
        table.extend(std::iter::repeat_n(k, (share * slots).round() as usize));
    }
    // A shuffled permutation of 0..n, each step mapped to its share of the table.
    let order = sample::layout(n, n, salt(2));
    let pick: Vec<usize> = order.iter().map(|&j| j * table.len() / n.max(1)).collect();
    let mut owed = [0.0; est::COMMANDS.len()];
    (0..n)
        .map(|i| {
            if subshell[i] {
                return SUBSHELL;
            }
            let k = table[pick[i]];
            owed[k] += more_share(k);
            let more = owed[k] >= 1.0;
            if more {
                owed[k] -= 1.0;
            }
            let writer = if writes[i] { WRITES } else { 0 };
            if k == GIT && runs_git[i] {
                return writer + GIT_PARENT + 2 * usize::from(forked[i]) + usize::from(more);
            }
            writer + 2 * k + usize::from(more) + if forked[i] { FORKED } else { 0 }
        })
        .collect()
}

/// Which of `n` commands of piece `piece` of a script the shell precedes by truncating a file
/// ([`est::SHELL_DISCARDS`] of them when the filesystem discards, none otherwise).
fn shell_truncates(n: usize, script: usize, piece: usize, discard: bool) -> Vec<bool> {
    let share = if discard { est::SHELL_DISCARDS } else { 0.0 };
    sample::flags(n, share, pieces::salt(5 ^ ((script as u64) << 48), piece))
}

/// Share of kind `k`'s commands that take its variant with `more`: its writers where only some
/// write, else the fraction of its discards that rounding down leaves.
fn more_share(k: usize) -> f64 {
    let c = &est::COMMANDS[k];
    c.writers.as_ref().map_or(c.discards.fract(), |w| w.share)
}

/// git's share of the commands the scripts start: the recording's share of the processes,
/// less the gits that a git started ([`est::GIT_RUNS_GIT`]).
fn git_share_of_scripts() -> f64 {
    est::COMMANDS[GIT].share / (1.0 + est::GIT_RUNS_GIT)
}

impl Gitsource {
    /// The shell's part of one command: start the child and wait for it; with `truncate`,
    /// the shell's own redirection first truncates a file and waits for that discard.
    fn shell_command(&self, sh: &mut Vec<Op>, script: usize, child: usize, truncate: Option<Amount>) {
        let program = (script * PER_SCRIPT + child) as u32;
        let mut shell = self.costs.shell;
        if let Some(service_ns) = truncate {
            // A builtin's output redirected onto a file the test wrote before (`echo ... >expect`):
            // open(O_TRUNC) frees the file's blocks, which ext4 discards at once (ext4_setattr →
            // ext4_truncate → … → ext4_free_blocks → ext4_mb_clear_bb → ext4_issue_discard)
            // inside a plug: the shell waits in D while the CPU's kblockd worker dispatches it,
            // half-way through its work for the command.
            shell /= 2.0;
            sh.extend([
                shell_work(shell),
                Op::IoPlugged { dev: DISK, service_ns, dispatch_cycles: kthreads::dispatch_cycles(Access::Discard) },
            ]);
        }
        match start_of(child) {
            Start::Subshell => {
                // A subshell: its output through the pipe, then wait4. The fork's tail runs
                // after the child is queued, before the shell blocks on the pipe.
                sh.extend(self.fork(shell, program));
                sh.push(Op::Wait { ch: pipe_ch(script) });
            }
            // fork, not vfork: the shell goes on to wait for the command (its output's end,
            // then wait4) in S.
            Start::ForkExec => sh.extend(self.fork(shell, program)),
            Start::Vfork => {
                // vfork: D until the exec, then wait4. The vfork copies no address space
                // (`kernel::VFORK_CYCLES`, not a fork's cost). Its tail runs after the child
                // is queued, which from 6.12 keeps the shell queued behind it while it sleeps
                // (DELAY_DEQUEUE) and has the exec's wake-up preempt the child, as recorded;
                // the return from the vfork comes before the shell sleeps in wait4.
                let vfork = kernel::VFORK_CYCLES;
                let tail = kernel::VFORK_TAIL_CYCLES;
                let ret = kernel::VFORK_RETURN_CYCLES;
                sh.extend([shell_work(shell), cpu(vfork - tail - ret), Op::Spawn { program, count: 1 }]);
                sh.extend([cpu(tail), Op::WaitUninterruptible { ch: vfork_ch(script) }, cpu(ret)]);
            }
        }
        sh.extend([Op::WaitChildren, Op::Mark(Mark::Add { counter: PROGRESS, amount: 1 })]);
    }

    /// The shell's `shell` cycles of work for a command and a fork of `program`, whose tail the
    /// shell runs after the child is queued ([`kernel::FORK_TAIL_CYCLES`]).
    fn fork(&self, shell: f64, program: u32) -> [Op; 4] {
        let [before, spawn, tail] = process::fork(program, self.costs.fork, est::MEM_FRAC);
        [shell_work(shell), before, spawn, tail]
    }

    /// A command of kind `k` started by script `script`'s shell (`parent`) or by a git: its
    /// part before the exec (which, with vfork, releases the shell; a git's child closes the
    /// exec-notify pipe its parent waits on at its exec), then its execs, its work (with its
    /// discards, rounded down or, with `more`, up, if the filesystem waits for them, and, with
    /// `runs`, a git of its own in the middle), exit, which with `writeback` (a request's
    /// device time) first starts the writeback of a file it wrote.
    #[allow(clippy::too_many_arguments)]
    fn command(
        &self,
        k: usize,
        more: bool,
        parent: Parent,
        script: usize,
        runs: Option<u32>,
        discard_ns: &[Amount],
        writeback: Option<Amount>,
    ) -> Rc<[Op]> {
        let c = &est::COMMANDS[k];
        let exec = Op::Exec { comm: c.comm };
        let counted = Op::Mark(Mark::Add { counter: EXECS, amount: 1 });
        let mut p = vec![cpu(est::VFORK_CHILD_CYCLES)];
        if parent == Parent::ShellVfork {
            p.push(Op::Post { ch: vfork_ch(script), sync: false });
        }
        // A git's child execs git itself, not through the wrapper script.
        let execs = if parent == Parent::Git { 1 } else { c.execs };
        for i in 0..execs {
            p.push(exec.clone());
            if parent == Parent::Git && i == 0 {
                p.push(Op::Post { ch: notify_ch(script), sync: false });
            }
            p.extend([counted.clone(), cpu(self.costs.exec)]);
        }
        let forks = if runs.is_some() { self.costs.fork } else { 0.0 };
        // The recorded CPU holds each exec's CPUIDs on the recording guest; the simulator
        // charges them at the platform's cost (Op::Exec).
        let exec_part = self.costs.exec + kernel::RECORDED_STARTUP_CYCLES;
        let kernel_part = est::VFORK_CHILD_CYCLES + execs as f64 * exec_part + kernel::EXIT_CYCLES + forks;
        // The work between the discards: a writer's come together near its end; other kinds'
        // spread evenly through it, a whole one more where the share has built up.
        let parts: Vec<f64> = match (&c.writers, more) {
            (Some(w), true) => {
                let own = (w.cycles - kernel_part).max(0.0) * self.costs.work_scale;
                let n = if self.discard { w.discards as usize } else { 0 };
                let after = (w.after_cycles - kernel::EXIT_CYCLES).max(0.0) * self.costs.work_scale;
                let between = w.between_cycles * self.costs.work_scale;
                let tail = after + between * n.saturating_sub(1) as f64;
                if n == 0 || tail >= own {
                    vec![own / (n + 1) as f64; n + 1]
                } else {
                    let mut parts = vec![own - tail];
                    parts.extend(std::iter::repeat_n(between, n - 1));
                    parts.push(after);
                    parts
                }
            }
            (Some(_), false) => vec![(c.reader_cycles() - kernel_part).max(0.0) * self.costs.work_scale],
            (None, _) => {
                let own = (c.cycles - kernel_part).max(0.0) * self.costs.work_scale;
                let n = if self.discard { c.discards as usize + usize::from(more) } else { 0 };
                vec![own / (n + 1) as f64; n + 1]
            }
        };
        // A git that runs a git does so in its longest stretch of work (the first of equals):
        // a writer's before its discards.
        let longest = (0..parts.len()).fold(0, |best, i| if parts[i] > parts[best] { i } else { best });
        for (i, &work) in parts.iter().enumerate() {
            if i > 0 {
                // ext4 issues a discard inside a plug and waits for it: the CPU's kblockd
                // worker dispatches it once the task sleeps (`workload::kthreads`).
                p.push(Op::IoPlugged {
                    dev: DISK,
                    service_ns: discard_ns[i % discard_ns.len()],
                    dispatch_cycles: kthreads::dispatch_cycles(Access::Discard),
                });
            }
            if let (Some(program), true) = (runs, i == longest) {
                // run_command: fork; the child's exec closes the notify pipe this git reads
                // (S), then wait4 (S). Half the part before, half after.
                p.push(cpu(work / 2.0));
                p.extend(process::fork(program, self.costs.fork, est::MEM_FRAC));
                p.extend([Op::Wait { ch: notify_ch(script) }, Op::WaitChildren, cpu(work / 2.0)]);
            } else {
                p.push(cpu(work));
            }
        }
        if let Some(service_ns) = writeback {
            // Closing a file the command's redirection truncated and it rewrote starts its
            // writeback (`ext4_release_file` → `ext4_alloc_da_blocks` → `filemap_flush`); the
            // task exits without waiting for it.
            p.push(Op::IoWriteback { dev: DISK, service_ns });
        }
        p.extend([cpu(kernel::EXIT_CYCLES), Op::Exit]);
        p.into()
    }

    /// A subshell of script `script`: the shell's code, its output into the pipe, exit.
    fn subshell(script: usize) -> Rc<[Op]> {
        let own = (est::SUBSHELL_CYCLES - kernel::EXIT_CYCLES).max(0.0);
        vec![cpu(own), Op::Post { ch: pipe_ch(script), sync: false }, cpu(kernel::EXIT_CYCLES), Op::Exit].into()
    }
}

impl Workload for Gitsource {
    fn tasks(&self, _plat: &Platform) -> Vec<TaskSpec> {
        (0..self.scripts)
            .map(|s| {
                // Script s runs its share of the commands.
                let n = self.commands / self.scripts + usize::from(s < self.commands % self.scripts);
                let me = *self;
                let discard_ns = storage::access_ns(storage::device(me.device), Access::Discard);
                let sh = pieces::program(n, COMMANDS_PER_PIECE, vec![Op::Exit], move |piece, steps, sh| {
                    let truncates = shell_truncates(steps.len(), s, piece, me.discard);
                    for (i, child) in children(steps.len(), s, piece).into_iter().enumerate() {
                        let truncate = truncates[i].then(|| discard_ns[i % discard_ns.len()]);
                        me.shell_command(sh, s, child, truncate);
                    }
                });
                TaskSpec::new("sh", sh)
            })
            .collect()
    }

    fn programs(&self, _plat: &Platform) -> Vec<Rc<[Op]>> {
        // A discard of a small test file's few blocks (`storage`), binned.
        let discard_ns = storage::access_ns(storage::device(self.device), Access::Discard);
        // A writeback of a small file: a small write, binned; each program takes a bin.
        let write_ns = storage::access_ns(storage::device(self.device), Access::Write);
        let mut p: Vec<Rc<[Op]>> = Vec::with_capacity(self.scripts * PER_SCRIPT);
        for s in 0..self.scripts {
            let first = p.len();
            for writes in [false, true] {
                let writeback = |p: &Vec<Rc<[Op]>>| writes.then(|| write_ns[p.len() % write_ns.len()]);
                for parent in [Parent::ShellVfork, Parent::ShellFork] {
                    for k in 0..est::COMMANDS.len() {
                        for more in [false, true] {
                            let wb = writeback(&p);
                            p.push(self.command(k, more, parent, s, None, &discard_ns, wb));
                        }
                    }
                }
                p.push(Gitsource::subshell(s));
                // The gits that run a git, then the gits they run (which do not write back).
                let child = |more: bool| (first + GIT_CHILD + usize::from(more)) as u32;
                for parent in [Parent::ShellVfork, Parent::ShellFork] {
                    for more in [false, true] {
                        let wb = writeback(&p);
                        p.push(self.command(GIT, more, parent, s, Some(child(more)), &discard_ns, wb));
                    }
                }
                p.extend([false, true].map(|more| self.command(GIT, more, Parent::Git, s, None, &discard_ns, None)));
            }
        }
        p
    }

    fn devices(&self) -> Vec<DeviceSpec> {
        vec![storage::spec(storage::device(self.device))]
    }

    fn default_duration_ns(&self) -> u64 {
        // A cap: the run ends after the last command.
        3_600_000_000_000
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        measure::metric(&INFO, measure::elapsed_s(stats, PROGRESS as usize, self.commands as u64))
    }

    fn operations(&self, stats: &RunStats) -> Option<Operations> {
        Operations::counted(stats, EXECS, "execs")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn gitsource(scripts: usize, discard: bool) -> Gitsource {
        let costs = Costs {
            work_scale: 1.0,
            shell: us_cycles(est::PARENT_US.default),
            fork: us_cycles(kernel::FORK_US.default),
            exec: us_cycles(kernel::EXEC_US.default),
        };
        Gitsource { commands: 1000, scripts, discard, device: 3, costs }
    }

    fn kvm() -> Platform {
        Platform::from_json(include_str!("../../../../python/dvfslab/data/platforms/kvm-guest-2cpu.json"), "kvm")
            .unwrap()
    }

    /// The command kind of program `child` (None for a subshell), whether it runs a git and
    /// whether it is the variant with a discard more.
    fn kind(child: usize) -> (Option<usize>, bool, bool) {
        match child % WRITES {
            SUBSHELL => (None, false, false),
            c if c >= GIT_PARENT => (Some(GIT), true, (c - GIT_PARENT) % 2 == 1),
            c => (Some(c % FORKED / 2), false, c % 2 == 1),
        }
    }

    #[test]
    fn the_commands_are_the_recordings_mix_with_some_subshells() {
        let all = children(1000, 0, 0);
        // The recording's share of the children that exec write data back at exit.
        let writers = all.iter().filter(|&&k| k >= WRITES).count() as f64;
        let exec_ing = all.iter().filter(|&&k| k != SUBSHELL).count() as f64;
        assert!((writers / exec_ing - est::EXIT_FLUSH_SHARE).abs() < 0.03, "{writers} of {exec_ing}");
        // The rest as among the children that do not.
        let kids: Vec<usize> = all.iter().map(|&k| k % WRITES).collect();
        let subshells = kids.iter().filter(|&&k| k == SUBSHELL).count();
        assert_eq!(subshells, (1000.0 * est::SUBSHELL_SHARE).round() as usize);
        // The recording's share of the children that exec is started with fork, not vfork.
        let forked = kids.iter().filter(|&&k| k != SUBSHELL && start_of(k) == Start::ForkExec).count() as f64;
        assert!((forked / 1000.0 - est::FORK_EXEC_SHARE).abs() < 0.01, "{forked}");
        // git is kind 0; with the gits that gits start, git's share of the processes is the
        // recording's.
        let exec_ing = (1000 - subshells) as f64;
        let git = kids.iter().filter(|&&k| kind(k).0 == Some(GIT)).count() as f64;
        let runs_git = kids.iter().filter(|&&k| kind(k).1).count() as f64;
        let processes = exec_ing + runs_git;
        assert!(((git + runs_git) / processes - est::COMMANDS[GIT].share).abs() < 0.015, "{git} {runs_git}");
        assert!((runs_git / git - est::GIT_RUNS_GIT).abs() < 0.04, "{runs_git} of {git}");
        // A git takes its writer variant for the recording's share of its commands.
        let more =
            kids.iter().filter(|&&k| kind(k).0 == Some(GIT) && k % 2 == usize::from(k < SUBSHELL)).count() as f64;
        let writers = est::COMMANDS[GIT].writers.as_ref().unwrap();
        assert!((more / git - writers.share).abs() < 0.03, "{more} of {git}");
        // expr (kind 1) has no discards: never its variant with one more.
        assert!(!kids.iter().any(|&k| k < SUBSHELL && k % FORKED == 3));
        // Another script's order differs.
        assert_ne!(kids, children(1000, 1, 0));
    }

    /// The CPU a program takes on the recording guest: its runs, and its execs' CPUID exits
    /// (which the simulator charges at the platform's cost).
    fn cycles(p: &[Op]) -> f64 {
        let cpu = |op: &Op| match op {
            Op::Run { cycles, .. } => cycles.mean(),
            Op::Exec { .. } => kernel::RECORDED_STARTUP_CYCLES,
            _ => 0.0,
        };
        p.iter().map(cpu).sum()
    }

    #[test]
    fn a_command_releases_its_shell_at_exec_and_costs_its_measured_cpu() {
        let g = gitsource(2, false);
        let p = g.programs(&kvm());
        assert_eq!(p.len(), 2 * PER_SCRIPT);
        // git: the release of script 1's shell comes before both execs; the CPU adds up.
        let git = &p[PER_SCRIPT + 1];
        let release = git.iter().position(|op| *op == Op::Post { ch: vfork_ch(1), sync: false }).unwrap();
        let execs: Vec<usize> =
            git.iter().enumerate().filter(|(_, op)| matches!(op, Op::Exec { comm: "git" })).map(|(i, _)| i).collect();
        assert_eq!(execs.len(), 2);
        assert!(release < execs[0]);
        // A writing git costs the writers' CPU, a reading one the rest of the mean.
        let c = &est::COMMANDS[GIT];
        let writers = c.writers.as_ref().unwrap();
        assert!((cycles(git) - writers.cycles).abs() < 1.0, "{}", cycles(git));
        let reader = cycles(&p[PER_SCRIPT]);
        assert!((reader - c.reader_cycles()).abs() < 1.0, "{reader}");
        assert!((writers.share * cycles(git) + (1.0 - writers.share) * reader - c.cycles).abs() < 1.0);
        // Its forked variant releases nobody (its shell never waits in D) and costs the same.
        let forked = &p[PER_SCRIPT + FORKED + 1];
        assert!(!forked.iter().any(|op| matches!(op, Op::Post { .. })));
        assert!((cycles(forked) - writers.cycles).abs() < 1.0);
        // Without `discard` nobody waits on the disk; with it git and rm do.
        assert!(!p.iter().any(|prog| prog.iter().any(|op| matches!(op, Op::IoPlugged { .. }))));
        let d = gitsource(1, true).programs(&kvm());
        let waits = |program: usize| d[program].iter().filter(|op| matches!(op, Op::IoPlugged { .. })).count();
        // rm (kind 3): 8 or 9 discards; git (kind 0): none reading, 2 writing; expr (kind 1): none.
        assert_eq!((waits(6), waits(7)), (8, 9));
        assert_eq!((waits(0), waits(1)), (0, 2));
        assert_eq!(waits(2), 0);
    }

    #[test]
    fn a_writing_child_issues_a_write_request_at_exit_without_waiting_for_it() {
        let p = gitsource(1, false).programs(&kvm());
        let writes = |prog: &[Op]| prog.iter().filter(|op| matches!(op, Op::IoWriteback { dev: DISK, .. })).count();
        // Each command has its variant that writes back, right before its exit's work, with
        // the same CPU and no other wait; the base variants and the gits' children do not.
        for child in 0..WRITES {
            let (base, writer) = (&p[child], &p[WRITES + child]);
            assert_eq!(writes(base), 0, "{child}");
            if child == SUBSHELL || child >= GIT_CHILD {
                assert_eq!(writes(writer), 0, "{child}");
                continue;
            }
            assert_eq!(writes(writer), 1, "{child}");
            let n = writer.len();
            assert!(matches!(writer[n - 3], Op::IoWriteback { .. }), "{child}");
            assert_eq!(&writer[n - 2..], &[cpu(kernel::EXIT_CYCLES), Op::Exit]);
            assert!((cycles(writer) - cycles(base)).abs() < 1.0);
            assert_eq!(writer.len(), base.len() + 1);
        }
        // The request is a small write on the script's disk.
        let small = storage::access_ns(storage::device(3), Access::Write);
        for prog in &p[WRITES..] {
            if let Some(Op::IoWriteback { service_ns, .. }) =
                prog.iter().find(|op| matches!(op, Op::IoWriteback { .. }))
            {
                assert!(small.contains(service_ns));
            }
        }
        // A script's children take the writing variants, and the worker exists for them.
        let tasks = gitsource(1, false).tasks(&kvm());
        assert!(tasks[0]
            .program
            .iter()
            .any(|op| matches!(op, Op::Spawn { program, .. } if *program as usize >= WRITES)));
        assert!(kthreads::ends_writes_in_worker(p.iter()));
    }

    #[test]
    fn a_shells_child_releases_it_after_the_recordings_shorter_part_before_exec() {
        let p = gitsource(1, false).programs(&kvm());
        // The child's CPU before it releases its shell: gitsource's own (33 µs at 2.6 GHz),
        // shorter than the children of kernbench's make and shells.
        let git = &p[0];
        let release = git.iter().position(|op| *op == Op::Post { ch: vfork_ch(0), sync: false }).unwrap();
        let before = cycles(&git[..release]);
        assert!((before - 33e-6 * 2.6e9).abs() < 1.0, "{before}");
        assert!(before < super::super::estimates::kernbench::VFORK_CHILD_CYCLES);
        let (lo, hi) = est::VFORK_CHILD_US_RANGE;
        assert!((lo..=hi).contains(&(before / 2.6e3)));
    }

    #[test]
    fn a_git_that_runs_a_git_forks_it_and_waits_for_its_exec_then_its_exit() {
        let p = gitsource(2, false).programs(&kvm());
        // Script 1's git started with vfork that runs a git: it releases its shell, then
        // forks its child and sleeps in S on the notify pipe, then in wait4.
        let parent = &p[PER_SCRIPT + GIT_PARENT];
        let child_program = (PER_SCRIPT + GIT_CHILD) as u32;
        let spawn = parent.iter().position(|op| *op == Op::Spawn { program: child_program, count: 1 }).unwrap();
        let wait = parent.iter().position(|op| *op == Op::Wait { ch: notify_ch(1) }).unwrap();
        assert!(spawn < wait && parent[wait + 1] == Op::WaitChildren);
        // The fork's tail runs between the spawn and the wait.
        assert_eq!(parent[spawn + 1], cpu(kernel::FORK_TAIL_CYCLES));
        // Both are gits of the measured CPU (a reading one's), the parent's fork included.
        assert!((cycles(parent) - est::COMMANDS[GIT].reader_cycles()).abs() < 1.0, "{}", cycles(parent));
        // The child execs git once and closes the pipe right after its exec.
        let child = &p[PER_SCRIPT + GIT_CHILD];
        let execs: Vec<usize> =
            child.iter().enumerate().filter(|(_, op)| matches!(op, Op::Exec { comm: "git" })).map(|(i, _)| i).collect();
        assert_eq!(execs.len(), 1);
        assert_eq!(child[execs[0] + 1], Op::Post { ch: notify_ch(1), sync: false });
        assert!((cycles(child) - est::COMMANDS[GIT].reader_cycles()).abs() < 1.0);
    }

    #[test]
    fn a_writing_git_waits_for_its_discards_together_near_its_end() {
        let p = gitsource(1, true).programs(&kvm());
        let writer = &p[1];
        let w = est::COMMANDS[GIT].writers.as_ref().unwrap();
        let waits: Vec<usize> =
            writer.iter().enumerate().filter(|(_, op)| matches!(op, Op::IoPlugged { .. })).map(|(i, _)| i).collect();
        assert_eq!(waits.len(), w.discards as usize);
        // The recording's spacing: the waits `between_cycles` apart, the last `after_cycles`
        // of CPU before the exit, the rest of the work before the first.
        let (first, last) = (waits[0], waits[waits.len() - 1]);
        assert!((cycles(&writer[waits[0]..waits[1]]) - w.between_cycles).abs() < 1.0);
        assert!((cycles(&writer[last..]) - w.after_cycles).abs() < 1.0, "{}", cycles(&writer[last..]));
        assert!(cycles(&writer[..first]) > 0.5 * w.cycles);
        // A reading git never waits.
        assert!(!p[0].iter().any(|op| matches!(op, Op::IoPlugged { .. })));
    }

    #[test]
    fn the_shells_work_per_command_is_the_recordings_skewed_shape_around_its_mean() {
        let g = gitsource(1, false);
        let mut sh = Vec::new();
        g.shell_command(&mut sh, 0, 0, None);
        let Op::Run { cycles: work, .. } = sh[0] else { panic!("{:?}", sh[0]) };
        assert!((work.mean() - g.costs.shell).abs() < 1.0);
        // Most commands follow at a fraction of the mean; a few take many times it.
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        let mut draws: Vec<f64> = (0..20_000).map(|_| work.draw(&mut rng) / g.costs.shell).collect();
        draws.sort_by(f64::total_cmp);
        let median = draws[draws.len() / 2];
        assert!((0.4..0.5).contains(&median), "{median}");
        assert!(draws[draws.len() * 99 / 100] > 5.0);
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((mean - 1.0).abs() < 0.08, "{mean}");
    }

    #[test]
    fn a_shell_runs_a_forks_tail_before_it_blocks_on_a_forked_child() {
        let g = gitsource(1, false);
        let mut sh = Vec::new();
        g.shell_command(&mut sh, 0, SUBSHELL, None);
        let spawn = sh.iter().position(|op| matches!(op, Op::Spawn { .. })).unwrap();
        assert_eq!(&sh[spawn + 1..spawn + 3], &[cpu(kernel::FORK_TAIL_CYCLES), Op::Wait { ch: pipe_ch(0) }]);
        // The shell's work and fork are charged in full either way.
        let total = cycles(&sh);
        assert!((total - g.costs.shell - g.costs.fork).abs() < 1.0, "{total}");
        // A vfork parent blocks in D after the shorter vfork tail, and returns from the vfork
        // once released before it waits for the child's exit.
        let mut sh = Vec::new();
        g.shell_command(&mut sh, 0, 0, None);
        let spawn = sh.iter().position(|op| matches!(op, Op::Spawn { .. })).unwrap();
        assert_eq!(sh[spawn + 1], cpu(kernel::VFORK_TAIL_CYCLES));
        assert_eq!(sh[spawn + 2], Op::WaitUninterruptible { ch: vfork_ch(0) });
        assert_eq!(&sh[spawn + 3..spawn + 5], &[cpu(kernel::VFORK_RETURN_CYCLES), Op::WaitChildren]);
        // A vfork copies no address space: it costs the shell a vfork, not a fork.
        let total = cycles(&sh);
        assert!((total - g.costs.shell - kernel::VFORK_CYCLES).abs() < 1.0, "{total}");
        assert!(kernel::VFORK_CYCLES < g.costs.fork);
    }

    #[test]
    fn with_discard_a_tenth_of_the_shells_commands_wait_for_a_truncated_files_discard() {
        // Without `discard` the shell never waits on the disk.
        assert!(!shell_truncates(1000, 0, 0, false).iter().any(|&t| t));
        let truncates = shell_truncates(1000, 0, 0, true);
        let n = truncates.iter().filter(|&&t| t).count();
        assert_eq!(n, (1000.0 * est::SHELL_DISCARDS).round() as usize);
        assert!(n > 0);
        // Such a command: half the shell's work, the plugged discard, the other half and the
        // vfork; the shell's CPU for it is unchanged.
        let g = gitsource(1, true);
        let service_ns = Amount::Fixed(42e3);
        let mut sh = Vec::new();
        g.shell_command(&mut sh, 0, 0, Some(service_ns));
        assert_eq!(
            sh[1],
            Op::IoPlugged { dev: DISK, service_ns, dispatch_cycles: kthreads::dispatch_cycles(Access::Discard) }
        );
        let spawn = sh.iter().position(|op| matches!(op, Op::Spawn { .. })).unwrap();
        assert!(spawn > 1);
        assert!((cycles(&sh) - g.costs.shell - kernel::VFORK_CYCLES).abs() < 1.0, "{}", cycles(&sh));
        // The shells' programs carry those waits: a script of 1000 commands has ~100.
        let tasks = g.tasks(&kvm());
        let plugged = tasks[0].program.iter().filter(|op| matches!(op, Op::IoPlugged { .. })).count();
        assert_eq!(plugged, n);
    }
}
