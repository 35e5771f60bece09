//! kernbench: `make -jN vmlinux` of a defconfig kernel, timed (MMTests; docs/workloads-compute.md).
//!
//! make is a jobserver with `jobs` slots. Each compilation unit is a job: a copy of make
//! (the sub-make of the unit's directory) runs the unit's recipe lines one after another,
//! each an `sh -c` that make starts with `posix_spawn` and reaps, as kbuild 6.1's
//! `rule_cc_o_c` has them:
//!
//! ```text
//!   make ─► make (job) ─► sh -c ─► gcc ─► cc1 (W, lognormal; `cold_reads` block reads)
//!                │          │        └──► as (0.012·W)
//!                │          ├──► objtool (0.019·W, 64% of the units), fixdep, rm
//!                ├──► sh -c ─► check-local-export (bash) ─► subshell ─► nm (0.065·W) ─pipe─┐
//!                │                                  └──► awk ◄──────────────────────────┘
//!                └──► 5.6 sh -c of builtins only (the unit's other recipe lines)
//! ```
//!
//! Every process is a new task placed by fork balancing with a fresh `util_avg`. make, sh
//! and gcc start their children with vfork (`posix_spawn`, dash's and libiberty's `vfork`):
//! the parent sleeps in D until the child's exec releases it, then waits for its exit in S;
//! the bash script forks its subshell and pipes nm's listing into awk. Before the units, the
//! serial startup of a build after `make clean` (a few steps: make's parse, the two compiles
//! `make clean` removed, the checks), after them the serial link chain (vmlinux.o, modpost,
//! three kallsyms passes, final link). fork is charged to the parent, exec and exit to the
//! child (`estimates::kernel`); each process's CPU in all is the recording's
//! (`estimates::kernbench`). The run ends when the link finishes.
//!
//! Metric: Elapsed in seconds (lower is better), the makespan, as MMTests parses `time`.
//! `units` scales the whole build: the startup and link are scaled by
//! `units / 2700`, so the serial share stays that of the real build; `units=2700` is the
//! full defconfig build. `compile_scale` and `serial_scale` scale the compilers' work and the
//! serial start and link, the calibrated costs (`estimates::kernbench`). `cold_reads` block
//! reads a unit waits for in cc1 model a build whose sources the page cache does not hold
//! (the recordings machine reclaims cold page cache), on the storage device `device`; MMTests
//! times a warm build (0). With `discard` the filesystem discards freed blocks synchronously
//! (ext4 without a journal, mounted with `discard`, the recordings machine's): gcc then waits
//! in D for the discard of its temporary assembly file once as has exited, one a unit,
//! dispatched by the CPU's kblockd worker. Shortcomings: the units are one flat pool (a job is a copy of
//! make, not a sub-make per directory, and no `built-in.a` archives), no module builds, no
//! writes; per-unit work comes from a binned lognormal (see `sample`).

use std::rc::Rc;

use super::estimates::{kernbench as est, kernel};
use super::kthreads;
use super::process;
use super::storage::{self, Access};
use super::{measure, sample, Better, DeviceSpec, Metric, Operations, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "kernbench",
    description: "make -jN vmlinux: jobserver, vfork/exec process trees per unit, serial link",
    metric: "elapsed",
    unit: "s",
    better: Better::Lower,
    knobs: &[
        Knob::new("jobs", "jobs", 0.0, 0.0, 4096.0, "make -j job slots (0 = number of CPUs)").integer(),
        Knob::new("units", "units", 64.0, 1.0, 100_000.0, "compilation units; 2700 = a full defconfig vmlinux")
            .integer(),
        est::COMPILE_SCALE,
        est::SERIAL_SCALE,
        Knob::new(
            "cold_reads",
            "reads",
            0.0,
            0.0,
            1000.0,
            "block reads a unit's cc1 waits for (sources the page cache does not hold); 0 = a warm build",
        ),
        storage::DISCARD,
        storage::knob(1.0),
    ],
    build: |k: &KnobValues| {
        Box::new(Kernbench {
            jobs: k.get_u64("jobs") as u32,
            units: k.get_u64("units") as usize,
            compile_scale: k.get(est::COMPILE_SCALE.name),
            serial_scale: k.get(est::SERIAL_SCALE.name),
            cold_reads: k.get("cold_reads"),
            discard: k.get_u64(storage::DISCARD.name) == 1,
            device: k.get_u64("device"),
        })
    },
};

/// Bins of the cc1 work distribution.
const BINS: usize = 16;
/// Channel of make's job slots; channel of the top make's serial (startup, link) children.
const SLOT_CH: u32 = 0;
const MAKE_CH: u32 = 1;
/// Each unit's channels, from `2 + CHANNELS_PER_UNIT · u`: one per parent that vforks (its
/// children's exec releases it there) and the pipe from nm to awk.
const CHANNELS_PER_UNIT: u32 = 7;
/// Counter 0: steps done (one per cc1, one per link step) for the progress of a cut-short run.
const PROGRESS: u16 = 0;
/// The device the cold reads wait on.
const DISK: u32 = 0;

struct Kernbench {
    jobs: u32,
    units: usize,
    /// Factors on the compilers' work and on the serial start and link.
    compile_scale: f64,
    serial_scale: f64,
    /// Block reads a unit's cc1 waits for, and the device they wait on.
    cold_reads: f64,
    /// Whether freed blocks are discarded synchronously (gcc's temporary file).
    discard: bool,
    device: u64,
}

fn run(cycles: f64) -> Op {
    Op::Run { cycles: Amount::Fixed(cycles), mem_frac: est::MEM_FRAC }
}

/// The vforks a process makes, and what it runs after each once the child's exec releases it
/// ([`vfork_wait`]).
#[derive(Clone, Copy)]
struct Vforks {
    count: u32,
    after: f64,
}

const NO_VFORKS: Vforks = Vforks { count: 0, after: 0.0 };

/// A process's own work: its CPU in all, as recorded, less the parts that the model charges
/// separately (a vfork child's work before its exec, the exec and the recording guest's CPUID
/// exits at its start, the exit, its vforks and its returns from them).
fn own(all_in: f64, exec: bool, vforks: Vforks) -> f64 {
    let exec_part = est::VFORK_CHILD_CYCLES + kernel::EXEC_CYCLES + kernel::RECORDED_STARTUP_CYCLES;
    let kernel_part = if exec { exec_part } else { 0.0 }
        + kernel::EXIT_CYCLES
        + vforks.count as f64 * (kernel::VFORK_CYCLES + vforks.after);
    (all_in - kernel_part).max(0.0)
}

/// A child that execs `comm`: its vfork part releases the parent waiting on `parent_ch`,
/// then the exec, `body`, and the exit (which wakes the parent in wait4).
fn exec_child(comm: &'static str, parent_ch: u32, body: Vec<Op>) -> Rc<[Op]> {
    exec_child_after(est::VFORK_CHILD_CYCLES, comm, parent_ch, body)
}

/// [`exec_child`] whose vfork part, before the exec releases the parent, takes `before`
/// cycles: the recording's children of the gcc driver take longer than make's and the
/// shells' (`estimates::kernbench::GCC_VFORK_CHILD_CYCLES`).
fn exec_child_after(before: f64, comm: &'static str, parent_ch: u32, body: Vec<Op>) -> Rc<[Op]> {
    let mut p = vec![run(before), Op::Post { ch: parent_ch, sync: false }, Op::Exec { comm }];
    p.push(run(kernel::EXEC_CYCLES));
    p.extend(body);
    p.extend([run(kernel::EXIT_CYCLES), Op::Exit]);
    p.into()
}

/// vfork a child running `program` and wait for it (`process::vfork_wait`), the vfork at
/// its cost, `after` the parent's own cycles between the exec's release and wait4.
fn vfork_wait(program: u32, ch: u32, after: f64) -> [Op; 6] {
    process::vfork_wait(program, ch, kernel::VFORK_CYCLES, after, est::MEM_FRAC)
}

/// The programs of the build, pushed in order; spawns name them by index.
struct Programs(Vec<Rc<[Op]>>);

impl Programs {
    fn add(&mut self, p: Rc<[Op]>) -> u32 {
        self.0.push(p);
        (self.0.len() - 1) as u32
    }
}

/// One unit's recipe as the programs of its processes; returns the job's program.
struct Unit {
    /// The unit's first channel.
    ch: u32,
    /// cc1's work.
    cc1: Amount,
    /// Whether objtool checks the object, and how many lines of builtins the recipe has.
    objtool: bool,
    empty_lines: u32,
    /// Block reads cc1 waits for, and their device time.
    reads: u32,
    read_ns: Amount,
    /// The device time of the discard gcc waits for when it deletes its temporary assembly
    /// file, if the filesystem discards freed blocks synchronously.
    discard_ns: Option<Amount>,
}

impl Unit {
    fn programs(&self, p: &mut Programs) -> u32 {
        let [job_ch, sh_ch, gcc_ch, cle_ch, bash_ch, sub_ch, pipe_ch] = std::array::from_fn(|i| self.ch + i as u32);
        let done = Op::Mark(Mark::Add { counter: PROGRESS, amount: 1 });
        let tool = |frac: f64| Op::Run { cycles: sample::scaled(self.cc1, frac), mem_frac: est::MEM_FRAC };
        // cc1 reads its sources as it goes: the first read a fixed stretch after its exec (the
        // source and its first headers, opened before any compiling), the others between
        // equal parts of the rest of its work.
        let read = Op::Io { dev: DISK, service_ns: self.read_ns, transfer_ns: Amount::ZERO };
        let mut cc1 = Vec::new();
        if self.reads == 0 {
            cc1.push(tool(1.0));
        } else {
            let mean = self.cc1.mean();
            let exec_part = kernel::EXEC_CYCLES + kernel::RECORDED_STARTUP_CYCLES;
            let first = (est::CC1_FIRST_READ_CYCLES - exec_part).clamp(0.0, mean / 2.0);
            cc1.extend([run(first), read.clone()]);
            let part = (1.0 - first / mean) / self.reads as f64;
            for i in 0..self.reads {
                if i > 0 {
                    cc1.push(read.clone());
                }
                cc1.push(tool(part));
            }
        }
        cc1.push(done);
        let cc1 = p.add(exec_child_after(est::GCC_VFORK_CHILD_CYCLES, "cc1", gcc_ch, cc1));
        let as_ = p.add(exec_child_after(est::GCC_VFORK_CHILD_CYCLES, "as", gcc_ch, vec![tool(est::AS_FRAC)]));
        let gcc_after = est::GCC_AFTER_VFORK_CYCLES;
        let driver = own(est::GCC_DRIVER_CYCLES, true, Vforks { count: 2, after: gcc_after });
        let [start, between, before_unlink, after_unlink] = est::GCC_DRIVER_SHARES.map(|s| run(s * driver));
        let mut gcc = vec![start];
        gcc.extend(vfork_wait(cc1, gcc_ch, gcc_after));
        gcc.push(between);
        gcc.extend(vfork_wait(as_, gcc_ch, gcc_after));
        gcc.push(before_unlink);
        if let Some(service_ns) = self.discard_ns {
            // The driver deletes the temporary `.s` that cc1 wrote and as read, at its exit.
            // Freeing its blocks on ext4 mounted with `discard` and no journal to defer the
            // discard to, ext4_mb_clear_bb issues it at once (ext4_issue_discard, a
            // synchronous sb_issue_discard) inside a plug and waits in D: the CPU's kblockd
            // worker dispatches it once gcc sleeps (`workload::kthreads`), and the block
            // completion's softirq wakes gcc.
            gcc.push(Op::IoPlugged {
                dev: DISK,
                service_ns,
                dispatch_cycles: kthreads::dispatch_cycles(Access::LargeDiscard),
            });
        }
        gcc.push(after_unlink);
        let gcc = p.add(exec_child("gcc", sh_ch, gcc));
        let mut children = vec![gcc];
        if self.objtool {
            children.push(p.add(exec_child("objtool", sh_ch, vec![tool(est::OBJTOOL_FRAC)])));
        }
        children.push(p.add(exec_child("fixdep", sh_ch, vec![run(own(est::FIXDEP_CYCLES, true, NO_VFORKS))])));
        children.push(p.add(exec_child("rm", sh_ch, vec![run(own(est::RM_CYCLES, true, NO_VFORKS))])));
        let sh_after = kernel::VFORK_RETURN_CYCLES;
        let sh_vforks = |count| Vforks { count, after: sh_after };
        // The shell's own work: a part before each later child and after the last as
        // recorded, the rest before gcc (`COMPILE_SH_BETWEEN_CYCLES`). A vfork's cycles
        // after its fork and the return from it are the vfork's tail and `sh_after`.
        let sh_own = own(est::COMPILE_SH_CYCLES, true, sh_vforks(children.len() as u32));
        let later = (est::COMPILE_SH_BETWEEN_CYCLES - kernel::VFORK_CYCLES - sh_after).max(0.0);
        let last = (est::COMPILE_SH_LAST_CYCLES - kernel::VFORK_TAIL_CYCLES - sh_after).max(0.0);
        let first = (sh_own - later * (children.len() - 1) as f64 - last).max(0.0);
        let mut compile = Vec::new();
        for (i, &c) in children.iter().enumerate() {
            compile.push(run(if i == 0 { first } else { later }));
            compile.extend(vfork_wait(c, sh_ch, sh_after));
        }
        compile.push(run(last));
        let compile = p.add(exec_child("sh", job_ch, compile));

        // check-local-export: `nm` in a subshell piping its listing into awk.
        let nm = tool(est::NM_FRAC / 2.0);
        let nm = p.add(exec_child(
            "nm",
            sub_ch,
            vec![nm.clone(), Op::Post { ch: pipe_ch, sync: false }, nm, Op::Post { ch: pipe_ch, sync: false }],
        ));
        let mut subshell = vec![run(own(est::SUBSHELL_CYCLES, false, sh_vforks(1)))];
        subshell.extend(vfork_wait(nm, sub_ch, sh_after));
        subshell.extend([run(kernel::EXIT_CYCLES), Op::Exit]);
        let subshell = p.add(subshell.into());
        let awk = vec![Op::Wait { ch: pipe_ch }, Op::Wait { ch: pipe_ch }, run(own(est::AWK_CYCLES, true, NO_VFORKS))];
        let awk = p.add(exec_child("awk", bash_ch, awk));
        let mut bash = vec![run(own(est::CHECK_EXPORT_CYCLES - kernel::FORK_CYCLES, true, sh_vforks(1)))];
        // bash forks the subshell (no vfork: it runs bash's code), vforks awk, then waits.
        bash.extend([run(kernel::FORK_CYCLES), Op::Spawn { program: subshell, count: 1 }]);
        bash.extend(vfork_wait(awk, bash_ch, sh_after));
        let bash = p.add(exec_child("check-local-export", cle_ch, bash));
        let mut cle = vec![run(own(est::EMPTY_SH_CYCLES, true, sh_vforks(1)))];
        cle.extend(vfork_wait(bash, cle_ch, sh_after));
        let cle = p.add(exec_child("sh", job_ch, cle));
        let empty = p.add(exec_child("sh", job_ch, vec![run(own(est::EMPTY_SH_CYCLES, true, NO_VFORKS))]));

        // The job: a copy of make running the unit's lines one after another; its exit
        // frees its slot. Of its work per line, the part between reaping a line and the vfork
        // of the next comes before each line (the recording's make runs that end in a vfork,
        // median 53 µs), the part after the child's exec releases it after each; the rest,
        // make's few long runs (a directory's Makefile parsed, its rules expanded), comes
        // once, at the job's start.
        let lines: Vec<u32> =
            [compile, cle].into_iter().chain(std::iter::repeat_n(empty, self.empty_lines as usize)).collect();
        let after = est::MAKE_AFTER_SPAWN_CYCLES;
        let mut job = vec![run((est::MAKE_LINE_CYCLES - est::MAKE_SPAWN_CYCLES - after) * lines.len() as f64)];
        // Drawn for each line: 53 µs ± 40% in all, the vfork's part fixed.
        let spread = est::MAKE_SPAWN_CYCLES * est::MAKE_SPAWN_SPREAD_PCT / 100.0;
        let before = est::MAKE_SPAWN_CYCLES - kernel::VFORK_CYCLES;
        let spawn = Amount::Uniform((before - spread).max(0.0), before + spread);
        for line in lines {
            job.push(Op::Run { cycles: spawn, mem_frac: est::MEM_FRAC });
            job.extend(vfork_wait(line, job_ch, after));
        }
        job.extend([run(kernel::EXIT_CYCLES), Op::Post { ch: SLOT_CH, sync: false }, Op::Exit]);
        p.add(job.into())
    }
}

impl Kernbench {
    /// The real build's serial parts scale with the number of units.
    fn scale(&self) -> f64 {
        self.units as f64 / est::UNITS_REAL
    }
    fn start_procs(&self) -> usize {
        ((est::START_PROCS * self.scale()).round() as usize).max(1)
    }

    /// The units' programs, then the startup's and the link chain's; returns the programs
    /// and the index of each unit's job, of the startup's process and of the first link step.
    fn build(&self) -> (Programs, Vec<u32>, u32, u32) {
        let cc1 = sample::lognormal(BINS, est::CC1_MEDIAN_CYCLES * self.compile_scale, est::CC1_SIGMA_LOG);
        let read_ns = storage::access_ns(storage::device(self.device), Access::RandomRead);
        // The discard of the temporary `.s`, hundreds of KiB: a large discard (`storage`), binned.
        let discard_ns = storage::access_ns(storage::device(self.device), Access::LargeDiscard);
        let objtool = sample::flags(self.units, est::OBJTOOL_SHARE, 1);
        let (mut empty_owed, mut reads_owed) = (0.0, 0.0);
        let mut p = Programs(Vec::new());
        let mut jobs = Vec::with_capacity(self.units);
        for (u, b) in sample::layout(self.units, BINS, 0).into_iter().enumerate() {
            // The fractional counts spread evenly over the units.
            empty_owed += est::EMPTY_LINES;
            reads_owed += self.cold_reads;
            let (empty_lines, reads) = (empty_owed.floor(), reads_owed.floor());
            empty_owed -= empty_lines;
            reads_owed -= reads;
            let unit = Unit {
                ch: 2 + CHANNELS_PER_UNIT * u as u32,
                cc1: cc1[b],
                objtool: objtool[u],
                empty_lines: empty_lines as u32,
                reads: reads as u32,
                read_ns: read_ns[u % read_ns.len()],
                discard_ns: self.discard.then(|| discard_ns[u % discard_ns.len()]),
            };
            jobs.push(unit.programs(&mut p));
        }
        let serial = self.serial_scale;
        let done = Op::Mark(Mark::Add { counter: PROGRESS, amount: 1 });
        // The serial start's scripts, and the link chain's linker and its helpers.
        let start_work = est::START_CYCLES * serial * self.scale() / self.start_procs() as f64;
        let start = p.add(exec_child("sh", MAKE_CH, vec![run(start_work)]));
        let mut link = None;
        for &w in &est::LINK_STEPS_CYCLES {
            let i = p.add(exec_child("ld", MAKE_CH, vec![run(w * serial * self.scale()), done.clone()]));
            link.get_or_insert(i);
        }
        (p, jobs, start, link.expect("the link chain has steps"))
    }
}

impl Workload for Kernbench {
    fn tasks(&self, plat: &Platform) -> Vec<TaskSpec> {
        let jobs = if self.jobs == 0 { plat.ncpus() as u32 } else { self.jobs };
        let (_, units, start, link) = self.build();
        let mut make = Vec::new();
        for _ in 0..self.start_procs() {
            make.extend(vfork_wait(start, MAKE_CH, est::MAKE_AFTER_SPAWN_CYCLES));
        }
        make.extend((0..jobs).map(|_| Op::Post { ch: SLOT_CH, sync: false }));
        // Each unit's job is a fork of make (no exec): it takes a slot and gives it back at
        // its exit.
        for job in units {
            make.extend([
                Op::Wait { ch: SLOT_CH },
                run(est::MAKE_DISPATCH_CYCLES),
                run(kernel::FORK_CYCLES),
                Op::Spawn { program: job, count: 1 },
            ]);
        }
        // Every slot back: every recipe has finished.
        make.extend((0..jobs).map(|_| Op::Wait { ch: SLOT_CH }));
        for i in 0..est::LINK_STEPS_CYCLES.len() as u32 {
            make.extend(vfork_wait(link + i, MAKE_CH, est::MAKE_AFTER_SPAWN_CYCLES));
        }
        make.push(Op::Exit);
        vec![TaskSpec::new("make", make.into())]
    }

    fn programs(&self, _plat: &Platform) -> Vec<Rc<[Op]>> {
        self.build().0 .0
    }

    fn devices(&self) -> Vec<DeviceSpec> {
        vec![storage::spec(storage::device(self.device))]
    }

    fn default_duration_ns(&self) -> u64 {
        // A cap: the run ends when the build does.
        3_600_000_000_000
    }

    fn metric(&self, stats: &RunStats) -> Metric {
        let total = (self.units + est::LINK_STEPS_CYCLES.len()) as u64;
        measure::metric(&INFO, measure::elapsed_s(stats, PROGRESS as usize, total))
    }

    /// Compilation units and link steps done.
    fn operations(&self, stats: &RunStats) -> Option<Operations> {
        Operations::counted(stats, PROGRESS, "build steps")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernbench(units: usize, cold_reads: f64) -> Kernbench {
        Kernbench { jobs: 2, units, compile_scale: 1.0, serial_scale: 1.0, cold_reads, discard: false, device: 3 }
    }

    /// An operation's CPU as the recording guest ran it: a run's cycles, an exec's CPUID
    /// exits (which the simulator charges at the platform's cost).
    fn recorded_cpu(op: &Op) -> f64 {
        match op {
            Op::Run { cycles, .. } => cycles.mean(),
            Op::Exec { .. } => kernel::RECORDED_STARTUP_CYCLES,
            _ => 0.0,
        }
    }

    /// The comms a unit's job execs, in the order its programs were built.
    fn execs(p: &[Rc<[Op]>]) -> Vec<&'static str> {
        p.iter()
            .filter_map(|prog| prog.iter().find_map(|op| if let Op::Exec { comm } = op { Some(*comm) } else { None }))
            .collect()
    }

    #[test]
    fn a_unit_runs_kbuilds_recipe_lines_each_vforked_and_waited_for() {
        let k = kernbench(45, 0.0);
        let (p, jobs, _, _) = k.build();
        // A unit: cc1, as, gcc, [objtool], fixdep, rm, sh; nm, awk, check-local-export, sh; sh.
        let per_unit: Vec<usize> = jobs.windows(2).map(|w| (w[1] - w[0]) as usize).collect();
        assert!(per_unit.iter().all(|&n| n == 13 || n == 14), "{per_unit:?}");
        let comms = execs(&p.0[..=jobs[0] as usize]);
        for comm in ["cc1", "as", "gcc", "fixdep", "rm", "sh", "nm", "awk", "check-local-export"] {
            assert!(comms.contains(&comm), "{comm} missing from {comms:?}");
        }
        // objtool checks 64% of the units.
        let objtool = p.0.iter().filter(|prog| prog.iter().any(|op| *op == Op::Exec { comm: "objtool" })).count();
        assert_eq!(objtool, (45.0 * est::OBJTOOL_SHARE).round() as usize);
        // A job spawns its lines one at a time, each a vfork: D until the exec, then wait4;
        // 5.6 lines of builtins a unit besides the compile and check-local-export.
        let lines: usize = jobs
            .iter()
            .map(|&j| p.0[j as usize].iter().filter(|op| matches!(op, Op::WaitUninterruptible { .. })).count())
            .sum();
        assert!((lines as f64 - 45.0 * (2.0 + est::EMPTY_LINES)).abs() <= 1.0, "{lines}");
        let job = &p.0[jobs[0] as usize];
        let spawns = job.iter().filter(|op| matches!(op, Op::Spawn { .. })).count();
        let waits = job.iter().filter(|op| matches!(op, Op::WaitChildren)).count();
        assert_eq!(spawns, waits);
    }

    #[test]
    fn cold_reads_put_block_reads_into_cc1_only() {
        let reads = |k: &Kernbench| {
            let (p, _, _, _) = k.build();
            p.0.iter().map(|prog| prog.iter().filter(|op| matches!(op, Op::Io { .. })).count()).sum::<usize>()
        };
        assert_eq!(reads(&kernbench(10, 0.0)), 0);
        // 3.9 a unit over 10 units: 39, spread as 3 or 4 per cc1.
        assert_eq!(reads(&kernbench(10, 3.9)), 39);
    }

    #[test]
    fn cc1_reads_first_a_fixed_stretch_after_its_exec_then_between_equal_parts() {
        let (p, _, _, _) = kernbench(10, 3.9).build();
        let mean = recorded_cpu;
        let mut seen = 0;
        for prog in p.0.iter().filter(|prog| prog.contains(&Op::Exec { comm: "cc1" })) {
            let exec = prog.iter().position(|op| *op == Op::Exec { comm: "cc1" }).unwrap();
            let reads: Vec<usize> =
                prog.iter().enumerate().filter(|(_, op)| matches!(op, Op::Io { .. })).map(|(i, _)| i).collect();
            assert!(reads.len() == 3 || reads.len() == 4, "{} reads", reads.len());
            // From the exec to the first read: the recording's 3.3 ms at 2.6 GHz, exec included.
            let to_first: f64 = prog[exec..reads[0]].iter().map(mean).sum();
            assert!((to_first / 2.6e6 - 3.3).abs() < 1e-6, "{} ms", to_first / 2.6e6);
            // The rest of cc1's work in equal parts between the reads.
            let parts: Vec<f64> = reads
                .iter()
                .zip(reads.iter().skip(1).chain([&(prog.len())]))
                .map(|(&a, &b)| prog[a + 1..b].iter().map(mean).find(|&c| c > 0.0).unwrap())
                .collect();
            assert!(parts.iter().all(|&c| (c / parts[0] - 1.0).abs() < 1e-9), "{parts:?}");
            seen += 1;
        }
        assert_eq!(seen, 10);
    }

    #[test]
    fn the_gcc_driver_works_between_its_children_as_recorded() {
        let discard = Kernbench { discard: true, ..kernbench(10, 0.0) };
        let (p, _, _, _) = discard.build();
        let mean = recorded_cpu;
        for prog in p.0.iter().filter(|prog| prog.contains(&Op::Exec { comm: "gcc" })) {
            // Its own work between the exec and its first vfork, the wait4 for cc1 and as's
            // vfork, the wait4 for as and the discard, the discard and the exit.
            let exec = prog.iter().position(|op| *op == Op::Exec { comm: "gcc" }).unwrap();
            let spawns: Vec<usize> =
                prog.iter().enumerate().filter(|(_, op)| matches!(op, Op::Spawn { .. })).map(|(i, _)| i).collect();
            let waits: Vec<usize> =
                prog.iter().enumerate().filter(|(_, op)| matches!(op, Op::WaitChildren)).map(|(i, _)| i).collect();
            let plug = prog.iter().position(|op| matches!(op, Op::IoPlugged { .. })).unwrap();
            let exit = prog.iter().position(|op| *op == Op::Exit).unwrap();
            let work = |a: usize, b: usize| prog[a + 1..b].iter().map(mean).sum::<f64>();
            // (The first from the exec itself: its CPUIDs are the exec operation's.)
            let phases = [work(exec - 1, spawns[0]), work(waits[0], spawns[1]), work(waits[1], plug), work(plug, exit)];
            // The recording's means: 1.71, 0.24, 0.22 and 0.20 ms (the last with the exit's
            // kernel work, the first with the exec's and the vfork's first part).
            let ms: Vec<f64> = phases.iter().map(|c| c / 2.6e6).collect();
            assert!(ms[0] > 1.5 && ms[0] < 1.8, "{ms:?}");
            assert!(ms[1..].iter().all(|&m| m > 0.1 && m < 0.3), "{ms:?}");
        }
    }

    #[test]
    fn the_compiles_shell_works_before_each_child_as_recorded() {
        let (p, _, _, _) = kernbench(10, 0.0).build();
        let mean = recorded_cpu;
        let shells = p.0.iter().filter(|prog| {
            prog.contains(&Op::Exec { comm: "sh" })
                && prog.iter().filter(|op| matches!(op, Op::Spawn { .. })).count() >= 3
        });
        let mut seen = 0;
        for prog in shells {
            seen += 1;
            let spawns: Vec<usize> =
                prog.iter().enumerate().filter(|(_, op)| matches!(op, Op::Spawn { .. })).map(|(i, _)| i).collect();
            let exit = prog.iter().position(|op| *op == Op::Exit).unwrap();
            // CPU from one fork to the next (the vfork's tail, the return, the shell's work and
            // the next vfork's first part): the recording's 0.156 ms; from the last to the
            // exit's kernel work, its 0.039 ms.
            let work = |a: usize, b: usize| prog[a + 1..b].iter().map(mean).sum::<f64>() / 2.6e6;
            for w in spawns.windows(2) {
                let ms = work(w[0], w[1]);
                assert!((ms - 0.156).abs() < 0.002, "{ms}");
            }
            let last = work(*spawns.last().unwrap(), exit - 1);
            assert!((last - 0.039).abs() < 0.002, "{last}");
            // The rest of its own work before gcc's vfork.
            assert!(work(0, spawns[0]) > 0.8, "{}", work(0, spawns[0]));
        }
        assert!(seen > 0);
    }

    #[test]
    fn with_synchronous_discards_gcc_waits_for_one_after_its_assembler_exits() {
        let plugged = |k: &Kernbench| {
            let (p, _, _, _) = k.build();
            let mut gcc = 0;
            for prog in p.0.iter().filter(|prog| prog.contains(&Op::Exec { comm: "gcc" })) {
                gcc += 1;
                // The discard comes after the wait for as: the last wait4, then the plug.
                let last_wait = prog.iter().rposition(|op| matches!(op, Op::WaitChildren)).expect("gcc waits");
                let plug = prog.iter().position(|op| matches!(op, Op::IoPlugged { .. }));
                if let Some(i) = plug {
                    assert!(i > last_wait, "the discard before as exits");
                }
            }
            let total: usize =
                p.0.iter().map(|prog| prog.iter().filter(|op| matches!(op, Op::IoPlugged { .. })).count()).sum();
            (gcc, total)
        };
        assert_eq!(plugged(&kernbench(10, 0.0)), (10, 0));
        let discard = Kernbench { discard: true, ..kernbench(10, 0.0) };
        // One a unit, all of them in gcc.
        assert_eq!(plugged(&discard), (10, 10));
        // Each the virtio disk's discard of a large file, with the large discard's dispatch:
        // the worker's run and the device's time add up to the recording's D sleeps (median
        // 179 µs), well beyond a small request's.
        let (p, _, _, _) = discard.build();
        let large = storage::access_ns(storage::device(3), Access::LargeDiscard);
        let mut device_ns = Vec::new();
        for prog in p.0.iter() {
            for op in prog.iter() {
                if let Op::IoPlugged { service_ns, dispatch_cycles, .. } = op {
                    assert!(large.contains(service_ns), "{service_ns:?}");
                    assert_eq!(*dispatch_cycles, kthreads::dispatch_cycles(Access::LargeDiscard));
                    device_ns.push(service_ns.mean());
                }
            }
        }
        device_ns.sort_by(f64::total_cmp);
        let sleep_us = (kthreads::dispatch_cycles(Access::LargeDiscard) / 2.6e3 + device_ns[5] / 1e3).round();
        assert!((150.0..210.0).contains(&sleep_us), "{sleep_us}");
    }

    #[test]
    fn the_gcc_drivers_children_take_longer_than_the_shells_before_they_release_it() {
        let (p, _, _, _) = kernbench(4, 0.0).build();
        // A child's CPU up to the Post that releases its vforking parent.
        let before = |comm: &'static str| {
            let prog = p.0.iter().find(|prog| prog.contains(&Op::Exec { comm })).expect(comm);
            let release = prog.iter().position(|op| matches!(op, Op::Post { .. })).unwrap();
            prog[..release]
                .iter()
                .map(|op| if let Op::Run { cycles, .. } = op { cycles.mean() } else { 0.0 })
                .sum::<f64>()
        };
        // The recording's medians: 71 µs for gcc's children, 53-56 for make's and sh's.
        for comm in ["cc1", "as"] {
            assert!((before(comm) - 71e-6 * 2.6e9).abs() < 1.0, "{comm} {}", before(comm));
        }
        for comm in ["gcc", "fixdep", "sh", "check-local-export", "awk"] {
            assert!((before(comm) - 55e-6 * 2.6e9).abs() < 1.0, "{comm} {}", before(comm));
        }
        let (lo, hi) = est::VFORK_CHILD_US_RANGE;
        for c in [est::VFORK_CHILD_CYCLES, est::GCC_VFORK_CHILD_CYCLES] {
            assert!((lo..=hi).contains(&(c / 2.6e3)));
        }
    }

    #[test]
    fn a_job_runs_a_short_stretch_before_each_vfork_and_the_rest_of_its_work_at_its_start() {
        let (p, jobs, _, _) = kernbench(4, 0.0).build();
        let job = &p.0[jobs[0] as usize];
        let lines = job.iter().filter(|op| matches!(op, Op::WaitUninterruptible { .. })).count();
        // Each line: a draw of 53 µs ± 40% in all up to the spawn, the vfork included, as
        // the recording's make runs that end in a vfork (p10 36, median 53 µs).
        let mut runs_before_spawn = Vec::new();
        let mut acc = 0.0;
        let mut first = None;
        for op in job.iter() {
            match op {
                Op::Run { cycles, .. } => acc += cycles.mean(),
                Op::Spawn { .. } => {
                    first.get_or_insert(acc);
                    runs_before_spawn.push(acc);
                }
                Op::WaitChildren => acc = 0.0,
                _ => {}
            }
        }
        let us = |c: f64| c / 2.6e3;
        for &r in &runs_before_spawn[1..] {
            assert!((us(r) - 53.0 + 1.5).abs() < 0.01, "{}", us(r));
        }
        let spread = job.iter().find_map(|op| match op {
            Op::Run { cycles: Amount::Uniform(lo, hi), .. } => Some((us(*lo), us(*hi))),
            _ => None,
        });
        let (lo, hi) = spread.expect("the stretch before a vfork is drawn");
        let vfork = us(kernel::VFORK_CYCLES);
        assert!((lo + vfork - 31.8).abs() < 0.01 && (hi + vfork - 74.2).abs() < 0.01, "{lo} {hi}");
        // The first line's run carries the rest of the job's work: each line's CPU in all is
        // still make's measured `MAKE_LINE_CYCLES`.
        let first = first.unwrap();
        let rest = (est::MAKE_LINE_CYCLES - est::MAKE_SPAWN_CYCLES - est::MAKE_AFTER_SPAWN_CYCLES) * lines as f64;
        assert!((first - rest - (est::MAKE_SPAWN_CYCLES - kernel::VFORK_TAIL_CYCLES)).abs() < 1.0, "{first}");
        let total: f64 = job.iter().map(|op| if let Op::Run { cycles, .. } = op { cycles.mean() } else { 0.0 }).sum();
        assert!((total - lines as f64 * est::MAKE_LINE_CYCLES - kernel::EXIT_CYCLES).abs() < 1.0, "{total}");
    }

    #[test]
    fn each_processs_own_work_is_its_measured_cpu_less_the_kernels_part() {
        // An sh of builtins: 0.96 ms at 2.6 GHz in all, half of it the recording guest's
        // CPUID exits at its start.
        let sh = est::VFORK_CHILD_CYCLES
            + kernel::EXEC_CYCLES
            + kernel::RECORDED_STARTUP_CYCLES
            + own(est::EMPTY_SH_CYCLES, true, NO_VFORKS)
            + kernel::EXIT_CYCLES;
        assert!((sh - est::EMPTY_SH_CYCLES).abs() < 1.0);
        // Never below zero.
        assert_eq!(own(1.0, true, Vforks { count: 3, after: 0.0 }), 0.0);
        // Each vfork is charged as a vfork (`kernel::VFORK_CYCLES`), not a fork, with the
        // parent's return from it.
        let after = kernel::VFORK_RETURN_CYCLES;
        let two = own(est::COMPILE_SH_CYCLES, true, NO_VFORKS)
            - own(est::COMPILE_SH_CYCLES, true, Vforks { count: 2, after });
        assert!((two - 2.0 * (kernel::VFORK_CYCLES + after)).abs() < 1.0);
        let (lo, hi) = kernel::VFORK_US_RANGE;
        assert!((lo..=hi).contains(&(kernel::VFORK_CYCLES / 2.6e3)));
    }
}
