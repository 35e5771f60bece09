//! Starting a program as a shell, make or a compiler driver does: the operations of the
//! parent's side of a vfork, which the models of process chains share.

use crate::sched::task::{Amount, Op};

use super::estimates::kernel;

/// fork a child running `program` at a cost of `fork` cycles, of which the parent runs the
/// last ([`kernel::FORK_TAIL_CYCLES`], at most all of it) after the child is queued: the fork's
/// return and the parent's code up to its read or wait4, what the caller puts next.
pub(super) fn fork(program: u32, fork: f64, mem_frac: f64) -> [Op; 3] {
    let run = |cycles: f64| Op::Run { cycles: Amount::Fixed(cycles), mem_frac };
    let tail = kernel::FORK_TAIL_CYCLES.min(fork);
    [run(fork - tail), Op::Spawn { program, count: 1 }, run(tail)]
}

/// vfork a child running `program`, sleep in D until its exec releases the parent on `ch`, run
/// `after` cycles, then sleep in wait4 until it exits. The vfork costs `vfork` cycles (no mm
/// to copy: [`kernel::VFORK_CYCLES`]), its last microseconds after the child is queued
/// ([`kernel::VFORK_TAIL_CYCLES`]): from 6.12 that leaves the parent just behind its child
/// when it sleeps, so it stays queued (DELAY_DEQUEUE), and the exec's wake-up finds the child
/// the one run past the average: the parent preempts it, as kernbench's recording shows in 537
/// of 580 vforks. `after` is the return from the vfork and the parent's code up to wait4: a
/// shell's [`kernel::VFORK_RETURN_CYCLES`], make's and the gcc driver's their own.
pub(super) fn vfork_wait(program: u32, ch: u32, vfork: f64, after: f64, mem_frac: f64) -> [Op; 6] {
    let run = |cycles: f64| Op::Run { cycles: Amount::Fixed(cycles), mem_frac };
    [
        run(vfork - kernel::VFORK_TAIL_CYCLES),
        Op::Spawn { program, count: 1 },
        run(kernel::VFORK_TAIL_CYCLES),
        Op::WaitUninterruptible { ch },
        run(after),
        Op::WaitChildren,
    ]
}
