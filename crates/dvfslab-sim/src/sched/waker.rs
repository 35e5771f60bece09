//! Who wakes a task, and from where: the caller of the kernel's `try_to_wake_up`.
//!
//! The kernel wakes a sleeping task from a task's system call (a pipe write, a futex wake),
//! from a softirq (a loopback socket send's receive, run in the NET_RX softirq on the sender's
//! CPU; a device's completion, in the block layer's softirq on the CPU the interrupt reached),
//! or from the task's own timer (an hrtimer, in hard-interrupt context on the CPU where the
//! task slept). Placement reads the waker's CPU and whether the wake-up is synchronous
//! (`WF_SYNC`, the waker about to sleep); traces log `sched_waking` on the waker's CPU in its
//! context.

/// The context a wake-up runs in, as the flags column of a kernel trace line shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeContext {
    /// A task's system call (the flags column's `.`).
    Task,
    /// A softirq (`s`): network receive, block completion.
    Softirq,
    /// A hard interrupt (`h`): timers.
    Hardirq,
}

impl WakeContext {
    /// The character of a trace line's flags column for this context.
    pub fn flag(self) -> char {
        match self {
            WakeContext::Task => '.',
            WakeContext::Softirq => 's',
            WakeContext::Hardirq => 'h',
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Waker {
    /// A task running on `cpu`; `sync` when it is about to sleep (`WF_SYNC`).
    Task { cpu: usize, sync: bool },
    /// A softirq on `cpu` (None: where the task slept); `sync` when the wake-up carries
    /// `WF_SYNC` (a socket's data-ready callback, sock_def_readable, asks for it even from
    /// softirq, the interrupted task being the sender about to wait for the answer).
    Softirq { cpu: Option<usize>, sync: bool },
    /// The task's own timer, which fires where the task slept (or a new task's start).
    Timer,
    /// The task moves itself off a CPU it may no longer use (sched_setaffinity's migration).
    Requeue,
}

impl Waker {
    /// The waker's CPU and whether the wake-up is synchronous, as placement reads them: None
    /// when placement starts from the task's previous CPU alone.
    pub(crate) fn placement_source(self) -> Option<(usize, bool)> {
        match self {
            Waker::Task { cpu, sync } => Some((cpu, sync)),
            Waker::Softirq { cpu, sync } => cpu.map(|c| (c, sync)),
            Waker::Timer | Waker::Requeue => None,
        }
    }

    /// Where `sched_waking` is logged, and in which context, for a task that slept on `prev`.
    pub(crate) fn logged_on(self, prev: usize) -> (usize, WakeContext) {
        match self {
            Waker::Task { cpu, .. } => (cpu, WakeContext::Task),
            Waker::Softirq { cpu, .. } => (cpu.unwrap_or(prev), WakeContext::Softirq),
            Waker::Timer => (prev, WakeContext::Hardirq),
            Waker::Requeue => (prev, WakeContext::Task),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_softirq_wakes_from_its_cpu_with_the_sync_hint_it_is_given() {
        let w = Waker::Softirq { cpu: Some(3), sync: false };
        assert_eq!(w.placement_source(), Some((3, false)));
        assert_eq!(w.logged_on(1), (3, WakeContext::Softirq));
        // A loopback receive's data-ready wake-up is synchronous, from the sender's CPU.
        let net = Waker::Softirq { cpu: Some(0), sync: true };
        assert_eq!(net.placement_source(), Some((0, true)));
        assert_eq!(net.logged_on(1), (0, WakeContext::Softirq));
        let local = Waker::Softirq { cpu: None, sync: false };
        assert_eq!(local.placement_source(), None);
        assert_eq!(local.logged_on(1), (1, WakeContext::Softirq));
    }

    #[test]
    fn a_timer_fires_in_hardirq_where_the_task_slept() {
        assert_eq!(Waker::Timer.placement_source(), None);
        assert_eq!(Waker::Timer.logged_on(2), (2, WakeContext::Hardirq));
        assert_eq!(Waker::Task { cpu: 0, sync: true }.placement_source(), Some((0, true)));
    }
}
