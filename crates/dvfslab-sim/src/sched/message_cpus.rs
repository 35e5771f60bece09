//! Where a pipe's or a socket's messages were written and where it was last used: the CPUs
//! whose caches hold its lines. Two moves between caches cost the CPU that makes them:
//! - the message's own: a message read on another CPU than its writer's moves what the writer
//!   filled (the data, the skb or the pipe buffer's page) into the reader's cache, and a write
//!   into a pipe or socket last read on another CPU takes back the memory the reader touched
//!   (the page, the skb memory the reader freed to its own CPU's slab);
//! - the object's: an operation on a pipe or socket whose last operation, by either side, was
//!   on another CPU takes its shared lines (the lock, the queue's head and tail, the wait
//!   queue, the send-buffer charge) from there. A writer that writes many messages in a row
//!   pays this once; tasks that take turns on it from two CPUs pay it at each turn.
//!
//! What each move costs is the operation's (`Op::PipeWrite`'s `crossing` and the like), charged
//! in sim/pipe.rs and sim/unix_stream.rs; on one CPU nothing moves.

use std::collections::VecDeque;

use crate::sched::task::CrossingCycles;

/// The writer's CPU of each queued message, oldest first, the CPU of the latest read and that
/// of the latest operation.
#[derive(Default)]
pub(crate) struct MessageCpus {
    writers: VecDeque<u16>,
    reader: Option<u16>,
    last: Option<u16>,
}

impl MessageCpus {
    /// A message written on `cpu`: what the moves it makes cost, of `costs`.
    pub(crate) fn written(&mut self, cpu: usize, costs: CrossingCycles) -> u32 {
        let cpu = cpu as u16;
        self.writers.push_back(cpu);
        let message = self.reader.is_some_and(|r| r != cpu);
        self.cost(cpu, message, costs)
    }

    /// The oldest message read on `cpu`: what the moves it makes cost, of `costs`.
    pub(crate) fn read(&mut self, cpu: usize, costs: CrossingCycles) -> u32 {
        let cpu = cpu as u16;
        self.reader = Some(cpu);
        let message = self.writers.pop_front().is_some_and(|w| w != cpu);
        self.cost(cpu, message, costs)
    }

    fn cost(&mut self, cpu: u16, message: bool, costs: CrossingCycles) -> u32 {
        let shared = self.last.is_some_and(|l| l != cpu);
        self.last = Some(cpu);
        u32::from(message) * costs.message + u32::from(shared) * costs.shared
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MESSAGE: CrossingCycles = CrossingCycles { message: 100, shared: 0 };
    const SHARED: CrossingCycles = CrossingCycles { message: 0, shared: 10 };

    #[test]
    fn a_message_crosses_when_read_on_another_cpu_or_written_where_another_read() {
        let mut m = MessageCpus::default();
        // Nothing read yet: the first writes have nothing to take back.
        assert_eq!(m.written(0, MESSAGE), 0);
        assert_eq!(m.written(1, MESSAGE), 0);
        // Read in order of writing: CPU 0's message stays, CPU 1's crosses.
        assert_eq!(m.read(0, MESSAGE), 0);
        assert_eq!(m.read(0, MESSAGE), 100);
        // Read last on CPU 0: a write there takes nothing back, one on CPU 1 does.
        assert_eq!(m.written(0, MESSAGE), 0);
        assert_eq!(m.written(1, MESSAGE), 100);
    }

    #[test]
    fn the_shared_lines_move_at_each_change_of_cpu_whichever_side() {
        let mut m = MessageCpus::default();
        // A batch written on CPU 0, then read on CPU 1, moves them once: at the first read.
        let batch: u32 = (0..50).map(|_| m.written(0, SHARED)).sum::<u32>();
        let read: u32 = (0..50).map(|_| m.read(1, SHARED)).sum::<u32>();
        assert_eq!((batch, read), (0, 10));
        // Writers on two CPUs taking turns move them at every write.
        let turns: u32 = (0..50).map(|i| m.written(i % 2, SHARED)).sum::<u32>();
        assert_eq!(turns, 50 * 10);
    }

    #[test]
    fn on_one_cpu_nothing_moves() {
        let both = CrossingCycles { message: 100, shared: 10 };
        let mut m = MessageCpus::default();
        for _ in 0..100 {
            assert_eq!(m.written(3, both) + m.written(3, both) + m.read(3, both), 0);
        }
    }
}
