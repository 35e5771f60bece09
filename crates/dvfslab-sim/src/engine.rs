//! The event queue: a binary min-heap keyed by (time, insertion sequence), so events at equal
//! times pop in the order they were scheduled and a run is reproducible bit for bit.
//! Push and pop cost O(log n). Cancelled events are not removed when cancelled: each carries
//! the token of what it belongs to, and a stale token makes the loop drop it when it pops.
//! Busy machines cancel most of what they schedule (a tick re-armed at every wake-up, a run
//! segment ended by every preemption), so the loop also sweeps stale events out now and then
//! (`retain`): the heap stays near its live size, and since the keys are unchanged the order of
//! what remains is too.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Simulated time in integer nanoseconds.
pub type TimeNs = u64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The run segment of the task current on `cpu` completes its work.
    SegmentEnd { cpu: u32, token: u32 },
    /// Scheduler tick on a busy CPU (no tick on idle CPUs: NO_HZ).
    Tick { cpu: u32, token: u32 },
    /// A sleeping task's timer expires.
    TimerWake { task: u32, token: u32 },
    /// A frequency domain finishes its transition to the pending frequency.
    FreqApply { domain: u32, token: u32 },
    /// The package controller re-evaluates the turbo limits of `package`'s domains.
    PcuTick { package: u32 },
    /// A driver's own timer for `policy` (powernv's global P-state ramp-down).
    DriverTimer { policy: u32, token: u32 },
    /// A sampling governor's timer for `policy`.
    GovernorTimer { policy: u32, token: u32 },
    /// An I/O submitted to device `dev` by `task` completes.
    IoComplete { dev: u32, task: u32 },
    /// Periodic read of the RAPL counters, so wraps are seen.
    RaplSample,
    /// End of the warm-up: what was measured so far is set aside.
    WarmupEnd,
    /// End of the simulated duration.
    End,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    time: TimeNs,
    seq: u64,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    // Reversed so that BinaryHeap (a max-heap) pops the earliest (time, seq) first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.time.cmp(&self.time).then_with(|| other.seq.cmp(&self.seq))
    }
}

#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    seq: u64,
    now: TimeNs,
}

impl EventQueue {
    pub fn now(&self) -> TimeNs {
        self.now
    }

    /// Events scheduled and not yet popped (stale ones included until swept).
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Keep only the events `live` accepts.
    pub fn retain(&mut self, mut live: impl FnMut(&Event) -> bool) {
        self.heap.retain(|e| live(&e.event));
    }

    /// Schedule `event` at `time`. Scheduling into the past is a bug in the caller.
    pub fn push(&mut self, time: TimeNs, event: Event) {
        debug_assert!(time >= self.now, "event {event:?} scheduled at {time} before now {}", self.now);
        let time = time.max(self.now);
        self.seq += 1;
        self.heap.push(Entry { time, seq: self.seq, event });
    }

    pub fn pop(&mut self) -> Option<(TimeNs, Event)> {
        let e = self.heap.pop()?;
        self.now = e.time;
        Some((e.time, e.event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_times_pop_in_insertion_order() {
        let mut q = EventQueue::default();
        q.push(10, Event::End);
        q.push(5, Event::RaplSample);
        q.push(10, Event::Tick { cpu: 1, token: 0 });
        q.push(10, Event::Tick { cpu: 2, token: 0 });
        let order: Vec<Event> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(
            order,
            vec![Event::RaplSample, Event::End, Event::Tick { cpu: 1, token: 0 }, Event::Tick { cpu: 2, token: 0 }]
        );
        assert_eq!(q.now(), 10);
    }

    #[test]
    fn retain_drops_events_and_keeps_the_order_of_the_rest() {
        let mut q = EventQueue::default();
        for (t, cpu) in [(10, 1), (5, 2), (10, 3), (7, 4), (10, 5)] {
            q.push(t, Event::Tick { cpu, token: 0 });
        }
        q.retain(|e| !matches!(e, Event::Tick { cpu: 2 | 3, .. }));
        assert_eq!(q.len(), 3);
        let order: Vec<Event> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        let tick = |cpu| Event::Tick { cpu, token: 0 };
        assert_eq!(order, vec![tick(4), tick(1), tick(5)]);
    }
}
