//! Kernel threads that a benchmark's own activity drives, as tasks (docs/model.md): the
//! block layer's kblockd workers, which dispatch the requests a task left in its plug when it
//! went to sleep, and RCU's grace-period kthread (its grace periods are `sim/rcu.rs`).
//!
//! A task that submits a bio inside a plug and then waits for it (`blkdev_issue_discard`
//! around `submit_bio_wait`: `Op::IoPlugged`) still holds the request when it sleeps. The
//! scheduler flushes the plug on the way (`sched_submit_work` → `blk_flush_plug` with
//! `from_schedule`), and a flush from the scheduler never issues to the driver itself: it runs
//! the hardware queue asynchronously (`blk_mq_run_hw_queue` with `async`), queuing the run on
//! the high-priority kblockd workqueue of the submitting CPU (`kblockd_mod_delayed_work_on`).
//! That CPU's worker, `kworker/N:NH`, runs next and dispatches the request
//! (`blk_mq_run_work_fn`); only then does the device start on it, so the task's D sleep is
//! the worker's run plus the device's time. Every kernel the project models (4.x to 6.x)
//! does this: the blk-mq plug has run the queue asynchronously from schedule since blk-mq
//! began, and when 5.16 let a plug flush issue requests directly, it kept the flush from
//! schedule asynchronous (`blk_mq_flush_plug_list`).
//!
//! The workers are nice −20 in the kernel; the model's CFS weighs every task as nice 0, so
//! they run as nice-0 tasks pinned to their CPU.

use std::rc::Rc;

use super::estimates::kthreads as est;
use super::storage::Access;
use super::TaskSpec;
use crate::hw::platform::Platform;
use crate::sched::task::{Amount, Op};

/// RCU's grace-period kthread (`sim/rcu.rs`): a nice-0 kernel thread free to run anywhere
/// that waits for work, runs, and does its grace-period step.
pub fn rcu_gp_kthread(plat: &Platform) -> TaskSpec {
    let base_khz = plat.cluster_of_cpu(0).frequency.base_khz as f64;
    let cycles = est::RCU_GP_RUN_CYCLES / 2.6e9 * base_khz * 1e3;
    let program: Rc<[Op]> =
        vec![Op::WaitGp, Op::Run { cycles: Amount::Fixed(cycles), mem_frac: 0.0 }, Op::GpWork, Op::Jump { to: 0 }]
            .into();
    TaskSpec::new("rcu_preempt", program).background()
}

/// The kblockd worker's run to dispatch one plugged request of this kind (cycles at 2.6 GHz,
/// the recordings' clock): a discard of a large file goes to the driver as several requests
/// (the block layer splits it at the device's discard limits), so its dispatch takes longer
/// than a small request's.
pub fn dispatch_cycles(access: Access) -> f64 {
    match access {
        Access::LargeDiscard => est::KBLOCKD_LARGE_DISCARD_RUN_CYCLES,
        _ => est::KBLOCKD_RUN_CYCLES,
    }
}

/// Whether any of these programs plugs a request (and so needs the kblockd workers). Programs
/// built piece by piece are judged by their first piece.
pub fn plugs_requests<'a>(programs: impl IntoIterator<Item = &'a Rc<[Op]>>) -> bool {
    programs.into_iter().any(|p| p.iter().any(|op| matches!(op, Op::IoPlugged { .. })))
}

/// One kblockd worker per CPU, pinned there: sleep until a task plugs a request on this CPU,
/// run for what the plugged requests take to dispatch (each carries its own cost, see
/// [`dispatch_cycles`]), dispatch every request plugged here, and sleep again.
pub fn kblockd_workers(plat: &Platform) -> Vec<TaskSpec> {
    (0..plat.ncpus())
        .map(|cpu| {
            let program: Rc<[Op]> = vec![Op::WaitPlugged, Op::RunPlugged, Op::RunHwQueue, Op::Jump { to: 0 }].into();
            TaskSpec::new(format!("kworker/{cpu}:1H"), program).pinned(vec![cpu]).background()
        })
        .collect()
}
