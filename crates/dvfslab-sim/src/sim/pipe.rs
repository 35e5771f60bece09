//! `Op::PipeWrite` and `Op::PipeRead`: the pipes of `sched/pipe.rs` in a run. A task that
//! finds its pipe full (empty) sleeps on it and, woken, does the same operation again, as
//! `pipe_write` (`pipe_read`) loops back after its wait; every wake-up is sync
//! (`wake_up_interruptible_sync_poll`).

use crate::sched::objects::{slot, Outcome};
use crate::sched::pipe::{Read, Wake, WakeRule, Write};
use crate::sched::task::CrossingCycles;
use crate::sim::Sim;

impl Sim {
    /// `task` on `cpu` writes one message of `bytes` to pipe `id`, `crossing` more where its
    /// cache lines come from another CPU.
    pub(crate) fn pipe_write(
        &mut self,
        id: u32,
        bytes: u32,
        crossing: CrossingCycles,
        task: usize,
        cpu: usize,
    ) -> Outcome {
        let rule = WakeRule::of(self.machine.kernel);
        let retry = std::mem::take(&mut self.sched.tasks[task].pipe_retry);
        let pipe = slot(&mut self.work.objects.pipes, id);
        match pipe.write(bytes, retry, rule) {
            Write::Full => {
                pipe.writers.push_back(task);
                self.sleep_to_retry(task)
            }
            Write::Done { readers, writers } => {
                self.sched.tasks[task].crossing_cycles += f64::from(pipe.cpus.written(cpu, crossing));
                self.pipe_wake(id, readers, false, cpu);
                self.pipe_wake(id, writers, true, cpu);
                Outcome::Continue
            }
        }
    }

    /// `task` on `cpu` reads one message from pipe `id`, `crossing` more where its
    /// cache lines come from another CPU.
    pub(crate) fn pipe_read(&mut self, id: u32, crossing: CrossingCycles, task: usize, cpu: usize) -> Outcome {
        let rule = WakeRule::of(self.machine.kernel);
        let retry = std::mem::take(&mut self.sched.tasks[task].pipe_retry);
        let pipe = slot(&mut self.work.objects.pipes, id);
        match pipe.read(retry, rule) {
            Read::Empty => {
                pipe.readers.push_back(task);
                self.sleep_to_retry(task)
            }
            Read::Done { writers, readers } => {
                self.sched.tasks[task].crossing_cycles += f64::from(pipe.cpus.read(cpu, crossing));
                self.pipe_wake(id, writers, true, cpu);
                self.pipe_wake(id, readers, false, cpu);
                Outcome::Continue
            }
        }
    }

    /// The task sleeps on the pipe and repeats its operation when it runs again, as one woken
    /// from the pipe's wait (`pipe_retry`).
    fn sleep_to_retry(&mut self, task: usize) -> Outcome {
        self.sched.tasks[task].pipe_retry = true;
        self.sleep_to_repeat(task)
    }

    /// Wake the first, or every, task waiting on pipe `id`'s write (`writers`) or read side.
    fn pipe_wake(&mut self, id: u32, wake: Wake, writers: bool, cpu: usize) {
        let pipe = slot(&mut self.work.objects.pipes, id);
        let queue = if writers { &mut pipe.writers } else { &mut pipe.readers };
        let woken: Vec<usize> = match wake {
            Wake::Nobody => return,
            Wake::First => queue.pop_front().into_iter().collect(),
            Wake::All => queue.drain(..).collect(),
        };
        self.wake_sync(woken, cpu);
    }
}
