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
//! ext4's end-I/O worker converts the unwritten extents a writeback wrote, after the write
//! completes: the block softirq's `ext4_end_bio` passes the I/O's end to
//! `ext4_add_complete_io`, which queues the inode's conversion work on the
//! `ext4-rsv-conversion` workqueue, an unbound one whose `kworker/uN:M` runs
//! `ext4_end_io_rsv_work`. Writeback allocates unwritten extents when the filesystem runs
//! with `dioread_nolock` (`ext4_should_dioread_nolock`), which 5.6 made ext4's default
//! for a block size of a page (`ext4_fill_super`, from 6.1 `ext4_set_def_opts`, setting
//! `DIOREAD_NOLOCK`; `-o dioread_lock` turns it off): on earlier kernels writeback allocates
//! written extents and the softirq ends the I/O itself.
//!
//! kblockd is a high-priority workqueue (`WQ_HIGHPRI`): its workers come from the CPU's
//! high-priority pool, whose kworkers run at nice −20 (`HIGHPRI_NICE_LEVEL`), weight 88,761
//! against a nice-0 task's 1,024. The model's are pinned to their CPU at that nice value.

use std::rc::Rc;

use super::estimates::kthreads as est;
use super::storage::Access;
use super::TaskSpec;
use crate::hw::platform::Platform;
use crate::kernel::KernelVersion;
use crate::sched::task::{Amount, Op};

/// RCU's grace-period kthread (`sim/rcu.rs`): a nice-0 kernel thread free to run anywhere
/// that waits for work, runs, and does its grace-period step.
pub fn rcu_gp_kthread(plat: &Platform) -> TaskSpec {
    let cycles = at_base_frequency(plat, 0, est::RCU_GP_RUN_CYCLES);
    let program: Rc<[Op]> =
        vec![Op::WaitGp, Op::Run { cycles: Amount::Fixed(cycles), mem_frac: 0.0 }, Op::GpWork, Op::Jump { to: 0 }]
            .into();
    TaskSpec::new("rcu_preempt", program).background()
}

/// A kernel thread's run measured as `cycles` at 2.6 GHz (the recordings' clock), as cycles
/// that take the same time at the base frequency of `cpu` on `plat`: kernel work is timed, not
/// scaled. Unbound threads are timed at CPU 0's.
pub(crate) fn at_base_frequency(plat: &Platform, cpu: usize, cycles: f64) -> f64 {
    cycles / 2.6e9 * plat.cluster_of_cpu(cpu).frequency.base_khz as f64 * 1e3
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

/// Whether any of these programs plugs a request or flushes a device's cache (and so needs the
/// kblockd workers). Programs built piece by piece are judged by their first piece.
pub fn plugs_requests<'a>(programs: impl IntoIterator<Item = &'a Rc<[Op]>>) -> bool {
    programs.into_iter().any(|p| p.iter().any(|op| matches!(op, Op::IoPlugged { .. } | Op::IoFlush { .. })))
}

/// The nice value of a high-priority workqueue's workers (HIGHPRI_NICE_LEVEL, MIN_NICE).
const HIGHPRI_NICE: i8 = -20;

/// One kblockd worker per CPU, pinned there, at nice −20: sleep until a task plugs a request on this CPU,
/// run for what the plugged requests take to dispatch (each carries its own cost, see
/// [`dispatch_cycles`]), dispatch every request plugged here, and sleep again.
pub fn kblockd_workers(plat: &Platform) -> Vec<TaskSpec> {
    (0..plat.ncpus())
        .map(|cpu| {
            let program: Rc<[Op]> = vec![Op::WaitPlugged, Op::RunPlugged, Op::RunHwQueue, Op::Jump { to: 0 }].into();
            TaskSpec::new(format!("kworker/{cpu}:1H"), program).pinned(vec![cpu]).nice(HIGHPRI_NICE).background()
        })
        .collect()
}

/// ksoftirqd/`cpu`, pinned there at nice 0: run the softirqs a softirq that outlasted its time
/// limit handed over (`wakeup_softirqd`, `sim/softirq.rs`; [`est::KSOFTIRQD_RUN_CYCLES`] at
/// 2.6 GHz, the recordings' clock, as time at the base frequency), sleep until it hands more,
/// and run again. The simulator starts it at the first hand-over, its first run that work.
pub fn ksoftirqd(plat: &Platform, cpu: usize) -> TaskSpec {
    let cycles = at_base_frequency(plat, cpu, est::KSOFTIRQD_RUN_CYCLES);
    let program: Rc<[Op]> =
        vec![Op::Run { cycles: Amount::Fixed(cycles), mem_frac: 0.0 }, Op::WaitSoftirq, Op::Jump { to: 0 }].into();
    TaskSpec::new(format!("ksoftirqd/{cpu}"), program).pinned(vec![cpu]).background()
}

/// The first kernel whose ext4 converts written extents in its end-I/O worker by default
/// (`dioread_nolock` the default from 5.6, see the module's text).
pub const END_IO_WORKER_SINCE: KernelVersion = KernelVersion(5, 6, 0);

/// Whether any of these programs writes to ext4 in a way whose end its end-I/O worker does
/// (`Op::IoWriteback`, `Op::IoEndWork`), and so needs the worker. Programs built piece by
/// piece are judged by their first piece.
pub fn ends_writes_in_worker<'a>(programs: impl IntoIterator<Item = &'a Rc<[Op]>>) -> bool {
    programs.into_iter().any(|p| p.iter().any(|op| matches!(op, Op::IoWriteback { .. } | Op::IoEndWork { .. })))
}

/// ext4's end-I/O worker on `kernel`, if it has one: an unbound nice-0 kworker that sleeps until
/// a completed write queues a conversion, runs `ext4_end_io_rsv_work` for it
/// ([`est::END_IO_WORK_RUN_CYCLES`] at 2.6 GHz, the recordings' clock, as time at the base
/// frequency), wakes the task waiting for that write if one is (the wake-up's own cost is the
/// simulator's, an IPI's on a guest's halted vCPU) and sleeps again.
pub fn end_io_worker(plat: &Platform, kernel: KernelVersion) -> Option<TaskSpec> {
    if kernel < END_IO_WORKER_SINCE {
        return None;
    }
    let cycles = at_base_frequency(plat, 0, est::END_IO_WORK_RUN_CYCLES);
    let program: Rc<[Op]> = vec![
        Op::WaitEndIoWork,
        Op::Run { cycles: Amount::Fixed(cycles), mem_frac: 0.0 },
        Op::EndIo,
        Op::Jump { to: 0 },
    ]
    .into();
    Some(TaskSpec::new("kworker/u8:0", program).background())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ext4s_end_io_worker_exists_from_5_6_and_runs_its_conversion() {
        let plat =
            Platform::from_json(include_str!("../../../../python/dvfslab/data/platforms/kvm-guest-2cpu.json"), "kvm")
                .unwrap();
        assert!(end_io_worker(&plat, KernelVersion(5, 5, 0)).is_none());
        assert!(end_io_worker(&plat, KernelVersion(4, 19, 0)).is_none());
        for kernel in [KernelVersion(5, 6, 0), KernelVersion(6, 18, 0)] {
            let w = end_io_worker(&plat, kernel).expect("a worker");
            assert!(w.name.starts_with("kworker/u"));
            assert_eq!(w.program[0], Op::WaitEndIoWork);
            // 8 µs at the guest's 2.6 GHz base.
            let Op::Run { cycles, .. } = w.program[1] else { panic!("{:?}", w.program) };
            assert!((cycles.mean() - 8e-6 * 2.6e9).abs() < 1.0, "{cycles:?}");
        }
        let (lo, hi) = est::END_IO_WORK_RUN_US_RANGE;
        assert!((lo..=hi).contains(&(est::END_IO_WORK_RUN_CYCLES / 2.6e3)));
    }

    #[test]
    fn ksoftirqd_is_pinned_to_its_cpu_and_runs_its_work_before_it_waits() {
        let plat =
            Platform::from_json(include_str!("../../../../python/dvfslab/data/platforms/kvm-guest-2cpu.json"), "kvm")
                .unwrap();
        let k = ksoftirqd(&plat, 1);
        assert_eq!(k.name, "ksoftirqd/1");
        assert_eq!(k.attrs.affinity.as_deref(), Some(&[1][..]));
        assert_eq!((k.attrs.nice, k.attrs.background), (0, true));
        // 2 µs at the guest's 2.6 GHz base, then the wait.
        let Op::Run { cycles, .. } = k.program[0] else { panic!("{:?}", k.program) };
        assert!((cycles.mean() - 2e-6 * 2.6e9).abs() < 1.0, "{cycles:?}");
        assert_eq!(k.program[1], Op::WaitSoftirq);
        let (lo, hi) = est::KSOFTIRQD_RUN_US_RANGE;
        assert!((lo..=hi).contains(&(est::KSOFTIRQD_RUN_CYCLES / 2.6e3)));
        let (lo, hi) = est::KSOFTIRQD_LAG_NS_RANGE;
        assert!((lo..=hi).contains(&est::KSOFTIRQD_LAG_NS));
    }
}
