//! An anonymous pipe carrying messages of one size smaller than a page, as fs/pipe.c keeps it:
//! a ring of `PIPE_DEF_BUFFERS` page slots, small writes merged into the last page while they
//! fit whole, a slot freed when a read empties its page. Which blocked writers a read wakes
//! changed twice, and the run's kernel decides ([`WakeRule`]); the operations that put tasks
//! to sleep and wake them are in sim/pipe.rs.

use std::collections::VecDeque;

use crate::kernel::KernelVersion;
use crate::sched::message_cpus::MessageCpus;

/// Page slots of a pipe (`PIPE_DEF_BUFFERS`).
pub const SLOTS: usize = 16;
/// Bytes of a page.
pub const PAGE_BYTES: u32 = 4096;

/// Whom a pipe operation wakes among the tasks waiting on its other side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wake {
    Nobody,
    /// The first waiter: an exclusive wait (`wait_event_interruptible_exclusive`, 5.6+).
    First,
    /// Every waiter: one shared queue without exclusive waits (before 5.6).
    All,
}

/// The kernel's rule for waking writers blocked on a full pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WakeRule {
    /// Before 5.6 (`pipe_read`, `pipe_write` of 5.4): readers and writers sleep on one wait
    /// queue (`pipe_wait`), woken all at once; a write wakes it after adding data, a read after
    /// freeing a slot.
    SharedQueue,
    /// 5.6 to 6.13 (commit 0ddad21d3e99 made the waits exclusive): a read that began on a full
    /// pipe wakes one writer at its end, whether or not it freed a slot; a woken writer that
    /// wrote and left the pipe not full wakes the next (`wake_next_writer`).
    ExclusiveWhenWasFull,
    /// 6.14+ (commit aaec5a95d596): a read wakes one writer only when it emptied a page of a
    /// full pipe (`wake_writer |= pipe_full(...)` before `pipe_update_tail`).
    ExclusiveWhenSlotFreed,
}

impl WakeRule {
    pub(crate) fn of(kernel: KernelVersion) -> WakeRule {
        if kernel >= KernelVersion(6, 14, 0) {
            WakeRule::ExclusiveWhenSlotFreed
        } else if kernel >= KernelVersion(5, 6, 0) {
            WakeRule::ExclusiveWhenWasFull
        } else {
            WakeRule::SharedQueue
        }
    }
}

/// A write's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Write {
    /// Written: wake these readers and writers.
    Done { readers: Wake, writers: Wake },
    /// Every slot is taken and the last page has no room: the writer sleeps until woken, then
    /// tries again.
    Full,
}

/// A read's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Read {
    /// One message read: wake these writers and readers.
    Done { writers: Wake, readers: Wake },
    /// Nothing to read: the reader sleeps until woken, then tries again.
    Empty,
}

/// One pipe's contents and waiters.
#[derive(Default)]
pub(crate) struct Pipe {
    /// Its pages, oldest first: messages written into each and read from it.
    pages: VecDeque<(u32, u32)>,
    /// Tasks blocked reading (rd_wait) and writing (wr_wait), in the order they slept.
    pub(crate) readers: VecDeque<usize>,
    pub(crate) writers: VecDeque<usize>,
    /// Where its messages were written and where it was last read.
    pub(crate) cpus: MessageCpus,
}

impl Pipe {
    fn is_full(&self) -> bool {
        self.pages.len() >= SLOTS
    }

    fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// Messages queued, not yet read.
    #[cfg(test)]
    fn queued(&self) -> u32 {
        self.pages.iter().map(|&(w, r)| w - r).sum()
    }

    /// Pages in use.
    #[cfg(test)]
    fn slots_used(&self) -> usize {
        self.pages.len()
    }

    /// `pipe_write` of one message of `bytes` (under a page). `retry`: the writer slept on the
    /// full pipe in this write and was woken; it goes straight to taking a slot, without
    /// trying to merge, and wakes the next writer if it leaves the pipe not full.
    pub(crate) fn write(&mut self, bytes: u32, retry: bool, rule: WakeRule) -> Write {
        let per_page = (PAGE_BYTES / bytes.max(1)).max(1);
        let was_empty = self.is_empty();
        let merged = match self.pages.back_mut() {
            Some((written, _)) if !retry && *written < per_page => {
                *written += 1;
                true
            }
            _ => false,
        };
        if !merged {
            if self.is_full() {
                return Write::Full;
            }
            self.pages.push_back((1, 0));
        }
        match rule {
            // Every write wakes the shared queue: readers waiting for data, and writers
            // waiting for room, who look again.
            WakeRule::SharedQueue => Write::Done { readers: Wake::All, writers: Wake::All },
            _ => Write::Done {
                readers: if was_empty { Wake::First } else { Wake::Nobody },
                writers: if retry && !self.is_full() { Wake::First } else { Wake::Nobody },
            },
        }
    }

    /// `pipe_read` of one message. `retry`: the reader slept on the empty pipe in this read
    /// and was woken; it wakes the next reader if it leaves data behind.
    pub(crate) fn read(&mut self, retry: bool, rule: WakeRule) -> Read {
        let was_full = self.is_full();
        let Some(front) = self.pages.front_mut() else { return Read::Empty };
        front.1 += 1;
        let freed = front.1 == front.0;
        if freed {
            self.pages.pop_front();
        }
        let writers = match rule {
            WakeRule::SharedQueue if freed => Wake::All,
            WakeRule::SharedQueue => Wake::Nobody,
            WakeRule::ExclusiveWhenWasFull if was_full => Wake::First,
            WakeRule::ExclusiveWhenSlotFreed if was_full && freed => Wake::First,
            _ => Wake::Nobody,
        };
        let readers = match rule {
            // The shared queue's wake-up reaches the other readers too.
            WakeRule::SharedQueue if freed => Wake::All,
            WakeRule::SharedQueue => Wake::Nobody,
            _ if retry && !self.is_empty() => Wake::First,
            _ => Wake::Nobody,
        };
        Read::Done { writers, readers }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSG: u32 = 100;

    fn fill(p: &mut Pipe, n: u32, rule: WakeRule) {
        for _ in 0..n {
            assert!(matches!(p.write(MSG, false, rule), Write::Done { .. }));
        }
    }

    #[test]
    fn small_writes_share_a_page_until_one_no_longer_fits() {
        let rule = WakeRule::ExclusiveWhenSlotFreed;
        let mut p = Pipe::default();
        // The first write into an empty pipe wakes its reader; the next ones merge silently.
        assert_eq!(p.write(MSG, false, rule), Write::Done { readers: Wake::First, writers: Wake::Nobody });
        assert_eq!(p.write(MSG, false, rule), Write::Done { readers: Wake::Nobody, writers: Wake::Nobody });
        fill(&mut p, 38, rule);
        assert_eq!((p.slots_used(), p.queued()), (1, 40));
        // 40 × 100 bytes fill 4,000 of 4,096: the 41st starts a page.
        fill(&mut p, 1, rule);
        assert_eq!(p.slots_used(), 2);
        // Sixteen pages: 640 messages, then the writer blocks.
        fill(&mut p, 599, rule);
        assert_eq!((p.slots_used(), p.queued()), (SLOTS, 640));
        assert_eq!(p.write(MSG, false, rule), Write::Full);
        assert_eq!(p.queued(), 640);
    }

    #[test]
    fn from_6_14_a_read_wakes_one_writer_only_when_it_frees_a_slot_of_a_full_pipe() {
        let rule = WakeRule::of(KernelVersion(6, 18, 0));
        assert_eq!(rule, WakeRule::ExclusiveWhenSlotFreed);
        let mut p = Pipe::default();
        fill(&mut p, 640, rule);
        for _ in 0..39 {
            assert_eq!(p.read(false, rule), Read::Done { writers: Wake::Nobody, readers: Wake::Nobody });
        }
        assert_eq!(p.read(false, rule), Read::Done { writers: Wake::First, readers: Wake::Nobody });
        // The woken writer takes the freed slot without merging, and leaves the pipe full:
        // it wakes no other writer.
        assert_eq!(p.write(MSG, true, rule), Write::Done { readers: Wake::Nobody, writers: Wake::Nobody });
        assert_eq!(p.slots_used(), SLOTS);
        // A running writer still merges into that last page, full ring or not.
        assert!(matches!(p.write(MSG, false, rule), Write::Done { .. }));
        assert_eq!(p.slots_used(), SLOTS);
        // Had it found the slot taken, the woken writer would block again.
        assert_eq!(p.write(MSG, true, rule), Write::Full);
    }

    #[test]
    fn a_woken_writer_that_leaves_room_wakes_the_next() {
        let rule = WakeRule::ExclusiveWhenSlotFreed;
        let mut p = Pipe::default();
        fill(&mut p, 640, rule);
        for _ in 0..80 {
            p.read(false, rule);
        }
        assert_eq!(p.slots_used(), SLOTS - 2);
        assert_eq!(p.write(MSG, true, rule), Write::Done { readers: Wake::Nobody, writers: Wake::First });
    }

    #[test]
    fn from_5_6_to_6_13_every_read_of_a_full_pipe_wakes_a_writer() {
        let rule = WakeRule::of(KernelVersion(6, 1, 0));
        assert_eq!(rule, WakeRule::ExclusiveWhenWasFull);
        let mut p = Pipe::default();
        fill(&mut p, 640, rule);
        // Each of the page's first 40 reads began on a full pipe.
        for _ in 0..40 {
            assert_eq!(p.read(false, rule), Read::Done { writers: Wake::First, readers: Wake::Nobody });
        }
        // Now a slot is free: the next read began on a pipe that was not full.
        assert_eq!(p.read(false, rule), Read::Done { writers: Wake::Nobody, readers: Wake::Nobody });
    }

    #[test]
    fn before_5_6_one_queue_wakes_everyone() {
        let rule = WakeRule::of(KernelVersion(5, 4, 0));
        assert_eq!(rule, WakeRule::SharedQueue);
        let mut p = Pipe::default();
        assert_eq!(p.write(MSG, false, rule), Write::Done { readers: Wake::All, writers: Wake::All });
        assert_eq!(p.read(false, rule), Read::Done { writers: Wake::All, readers: Wake::All });
        assert_eq!(p.read(false, rule), Read::Empty);
    }

    #[test]
    fn a_reader_woken_on_data_it_leaves_wakes_the_next_reader() {
        let rule = WakeRule::ExclusiveWhenSlotFreed;
        let mut p = Pipe::default();
        assert_eq!(p.read(false, rule), Read::Empty);
        fill(&mut p, 2, rule);
        assert_eq!(p.read(true, rule), Read::Done { writers: Wake::Nobody, readers: Wake::First });
        assert_eq!(p.read(true, rule), Read::Done { writers: Wake::Nobody, readers: Wake::Nobody });
        assert_eq!(p.queued(), 0);
    }
}
