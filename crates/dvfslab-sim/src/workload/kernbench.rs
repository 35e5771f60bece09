//! kernbench: `make -jN vmlinux` of a defconfig kernel, timed (MMTests; docs/workloads-compute.md).
//!
//! make is a jobserver with `jobs` slots. Each compilation unit is a process tree, every
//! process a new task placed by fork balancing with a fresh `util_avg`:
//!
//! ```text
//!   make ──fork──► sh -c ──fork──► gcc ──fork──► cc1 (W_cc1, lognormal) ─► exit
//!                    │               └──fork──► as  (0.05·W_cc1)        ─► exit
//!                    └──fork──► fixdep (2 ms) ─► exit; sh exits, make's slot frees (SIGCHLD)
//! ```
//!
//! before them the serial startup of a build after `make clean` (a few steps: make's parse,
//! the two compiles `make clean` removed, the checks), after them the serial link chain
//! (vmlinux.o, modpost, three kallsyms passes, final link). fork is charged to the parent,
//! exec and exit to the child (`estimates::kernel`). The run ends when the link finishes.
//!
//! Metric: Elapsed in seconds (lower is better), the makespan, as MMTests parses `time`.
//! `units` scales the whole build: the startup and link are scaled by
//! `units / 2700`, so the serial share stays that of the real build; `units=2700` is the
//! full defconfig build. `compile_scale` and `serial_scale` scale the compilers' work and the
//! serial start and link, the calibrated costs (`estimates::kernbench`). Shortcomings: the units are one flat pool (no directory sub-makes or
//! `built-in.a` archives), a recipe leaves out `rm`, `mv` and objtool's per-object check
//! (x86-64's default ORC unwinder selects stack validation), no module builds, no I/O;
//! per-unit work comes from a binned lognormal (see `sample`).

use std::rc::Rc;

use super::estimates::{kernbench as est, kernel};
use super::{measure, sample, Better, Metric, Operations, RunStats, TaskSpec, Workload, WorkloadInfo};
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Mark, Op};
use crate::spec::{Knob, KnobValues};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "kernbench",
    description: "make -jN vmlinux: jobserver, fork/exec process trees per unit, serial link",
    metric: "elapsed",
    unit: "s",
    better: Better::Lower,
    knobs: &[
        Knob::new("jobs", "jobs", 0.0, 0.0, 4096.0, "make -j job slots (0 = number of CPUs)").integer(),
        Knob::new("units", "units", 64.0, 1.0, 100_000.0, "compilation units; 2700 = a full defconfig vmlinux")
            .integer(),
        est::COMPILE_SCALE,
        est::SERIAL_SCALE,
    ],
    build: |k: &KnobValues| {
        Box::new(Kernbench {
            jobs: k.get_u64("jobs") as u32,
            units: k.get_u64("units") as usize,
            compile_scale: k.get(est::COMPILE_SCALE.name),
            serial_scale: k.get(est::SERIAL_SCALE.name),
        })
    },
};

/// Bins of the cc1 work distribution.
const BINS: usize = 16;
/// Channel of make's job slots; channel of make's serial (startup, link) children.
const SLOT_CH: u32 = 0;
const MAKE_CH: u32 = 1;
/// Counter 0: steps done (one per cc1, one per link step) for the progress of a cut-short run.
const PROGRESS: u16 = 0;

struct Kernbench {
    jobs: u32,
    units: usize,
    /// Factors on the compilers' work and on the serial start and link.
    compile_scale: f64,
    serial_scale: f64,
}

fn run(cycles: f64) -> Op {
    Op::Run { cycles: Amount::Fixed(cycles), mem_frac: est::MEM_FRAC }
}

/// A child process: exec of `comm`, its work, then it notifies its parent on `parent_ch`
/// (SIGCHLD, sent while the child is still current, as in do_exit) and exits.
fn process(comm: &'static str, work: Vec<Op>, parent_ch: u32) -> Rc<[Op]> {
    let mut p = vec![Op::Exec { comm }, run(kernel::EXEC_CYCLES)];
    p.extend(work);
    p.extend([run(kernel::EXIT_CYCLES), Op::Post { ch: parent_ch, sync: false }, Op::Exit]);
    p.into()
}

/// fork a child running `program` and wait4 it; the child posts `ch` when it exits.
fn fork_wait(program: usize, ch: u32) -> [Op; 3] {
    [run(kernel::FORK_CYCLES), Op::Spawn { program: program as u32, count: 1 }, Op::Wait { ch }]
}

/// Each unit has five programs (sh, gcc, cc1, as, fixdep) and two channels (sh's and gcc's
/// children report there); the startup and link programs follow the units.
const PER_UNIT: usize = 5;

impl Kernbench {
    /// The real build's serial parts scale with the number of units.
    fn scale(&self) -> f64 {
        self.units as f64 / est::UNITS_REAL
    }
    fn start_procs(&self) -> usize {
        ((est::START_PROCS * self.scale()).round() as usize).max(1)
    }
    fn start_program(&self) -> usize {
        PER_UNIT * self.units
    }
    fn link_program(&self, i: usize) -> usize {
        PER_UNIT * self.units + 1 + i
    }
}

impl Workload for Kernbench {
    fn tasks(&self, plat: &Platform) -> Vec<TaskSpec> {
        let jobs = if self.jobs == 0 { plat.ncpus() as u32 } else { self.jobs };
        let mut make = Vec::new();
        for _ in 0..self.start_procs() {
            make.extend(fork_wait(self.start_program(), MAKE_CH));
        }
        make.extend((0..jobs).map(|_| Op::Post { ch: SLOT_CH, sync: false }));
        for u in 0..self.units {
            make.extend([
                Op::Wait { ch: SLOT_CH },
                run(est::MAKE_DISPATCH_CYCLES),
                run(kernel::FORK_CYCLES),
                Op::Spawn { program: (PER_UNIT * u) as u32, count: 1 },
            ]);
        }
        // Every slot back: every recipe has finished.
        make.extend((0..jobs).map(|_| Op::Wait { ch: SLOT_CH }));
        for i in 0..est::LINK_STEPS_CYCLES.len() {
            make.extend(fork_wait(self.link_program(i), MAKE_CH));
        }
        make.push(Op::Exit);
        vec![TaskSpec::new("make", make.into())]
    }

    fn programs(&self, _plat: &Platform) -> Vec<Rc<[Op]>> {
        let cc1 = sample::lognormal(BINS, est::CC1_MEDIAN_CYCLES * self.compile_scale, est::CC1_SIGMA_LOG);
        let done = Op::Mark(Mark::Add { counter: PROGRESS, amount: 1 });
        let mut p: Vec<Rc<[Op]>> = Vec::new();
        for (u, b) in sample::layout(self.units, BINS, 0).into_iter().enumerate() {
            let (sh_ch, gcc_ch) = (2 + 2 * u as u32, 3 + 2 * u as u32);
            let first = PER_UNIT * u;
            // sh -c: gcc, then fixdep; its exit frees make's slot.
            let mut sh = vec![run(est::SHELL_CYCLES)];
            sh.extend(fork_wait(first + 1, sh_ch));
            sh.extend(fork_wait(first + 4, sh_ch));
            p.push(process("sh", sh, SLOT_CH));
            // gcc: cc1, then as.
            let mut gcc = vec![run(est::GCC_DRIVER_CYCLES)];
            gcc.extend(fork_wait(first + 2, gcc_ch));
            gcc.extend(fork_wait(first + 3, gcc_ch));
            p.push(process("gcc", gcc, sh_ch));
            p.push(process("cc1", vec![Op::Run { cycles: cc1[b], mem_frac: est::MEM_FRAC }, done.clone()], gcc_ch));
            let as_work = sample::scaled(cc1[b], est::AS_FRAC);
            p.push(process("as", vec![Op::Run { cycles: as_work, mem_frac: est::MEM_FRAC }], gcc_ch));
            p.push(process("fixdep", vec![run(est::FIXDEP_CYCLES)], sh_ch));
        }
        let serial = self.serial_scale;
        // The serial start's scripts, and the link chain's linker and its helpers.
        p.push(process(
            "sh",
            vec![run(est::START_CYCLES * serial * self.scale() / self.start_procs() as f64)],
            MAKE_CH,
        ));
        for &w in &est::LINK_STEPS_CYCLES {
            p.push(process("ld", vec![run(w * serial * self.scale()), done.clone()], MAKE_CH));
        }
        p
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
