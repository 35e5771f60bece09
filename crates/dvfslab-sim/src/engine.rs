//! The event queue, ordered by (time, insertion sequence), so events at equal times pop in the
//! order they were scheduled and a run is reproducible bit for bit. Push and pop cost
//! O(log n). Cancelled events are not removed when cancelled: each carries the token of what
//! it belongs to, and a stale token makes the loop drop it when it pops.
//!
//! Busy machines cancel most of what they schedule (a run segment ended by every preemption
//! and every frequency change, a tick re-armed at every wake-up). Those two kinds are at most
//! one per CPU, and a new one always supersedes the CPU's last. Run-segment ends live apart in
//! a tournament tree with one leaf per CPU, replaced in place: no stale copies to sift past,
//! and a new key replays only the matches it can change. Ticks fall on a few instants (the
//! tick boundaries: every busy CPU's next tick is the same one), so they are kept in one list
//! per instant, in scheduling order, and a superseded tick is skipped when its list is read:
//! a machine of hundreds of loaded CPUs pops its ticks in constant time. The rest go to a
//! binary heap, which the loop sweeps of stale events now and then (`retain`) so that it
//! stays near its live size. All order by the same (time, seq) keys, so the merged order, and
//! with it every run, is what one heap of everything gives.

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
    /// A request on device `dev` completes.
    IoComplete { dev: u32, request: IoRequest },
    /// A reschedule IPI sent to `cpu` while it ran a task reaches it; stale once that CPU has
    /// switched task (`token` counts its switches).
    ReschedIpi { cpu: u32, token: u32 },
    /// The running task of `cpu`, whose own loopback send woke a task that preempts it, is back
    /// at user mode, where the reschedule takes effect; stale once `cpu` has switched task.
    ReturnToUser { cpu: u32, token: u32 },
    /// A softirq pass on `cpu` that outlasted its time limit ends and hands what is pending to
    /// ksoftirqd (`sim/softirq.rs`).
    SoftirqEnd { cpu: u32 },
    /// Periodic read of the RAPL counters, so wraps are seen.
    RaplSample,
    /// End of the warm-up: what was measured so far is set aside.
    WarmupEnd,
    /// End of the simulated duration.
    End,
}

/// What a device serves: a task's request, which the task waits for (or a kernel worker ends
/// for it), or a writeback submitted from a CPU that no task waits for (its submitter may have
/// exited by the time it completes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoRequest {
    Task(u32),
    Writeback { cpu: u32 },
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
        key(other).cmp(&key(self))
    }
}

/// The slot of a run segment's end (one per CPU), None for the other kinds.
fn slot_of(event: &Event) -> Option<usize> {
    match *event {
        Event::SegmentEnd { cpu, .. } => Some(cpu as usize),
        _ => None,
    }
}

/// The ticks, one list per instant in time order, each list in scheduling (seq) order. A
/// CPU's new tick supersedes its queued one, which stays in its list and is skipped there.
#[derive(Default)]
struct TickLists {
    lists: std::collections::VecDeque<TickList>,
    /// Per CPU, the (seq, token) of its queued tick.
    queued: Vec<Option<(u64, u32)>>,
    len: usize,
    /// Emptied lists, kept for their storage.
    spare: Vec<Vec<(u64, u32)>>,
}

/// The ticks due at one instant.
struct TickList {
    time: TimeNs,
    /// (seq, cpu), in seq order.
    ticks: Vec<(u64, u32)>,
    /// How many of `ticks` were read.
    read: usize,
}

impl TickLists {
    fn push(&mut self, time: TimeNs, seq: u64, cpu: u32, token: u32) {
        let c = cpu as usize;
        if c >= self.queued.len() {
            self.queued.resize(c + 1, None);
        }
        if self.queued[c].replace((seq, token)).is_none() {
            self.len += 1;
        }
        // Most ticks go to the next tick boundary, at the front or just behind it.
        let at = self.lists.iter().position(|l| l.time >= time).unwrap_or(self.lists.len());
        if self.lists.get(at).is_none_or(|l| l.time != time) {
            let ticks = self.spare.pop().unwrap_or_default();
            self.lists.insert(at, TickList { time, ticks, read: 0 });
        }
        self.lists[at].ticks.push((seq, cpu));
    }

    /// The earliest queued tick, after dropping the read and superseded ones before it.
    fn peek(&mut self) -> Option<Entry> {
        loop {
            let list = self.lists.front_mut()?;
            while let Some(&(seq, cpu)) = list.ticks.get(list.read) {
                match self.queued[cpu as usize] {
                    Some((queued, token)) if queued == seq => {
                        return Some(Entry { time: list.time, seq, event: Event::Tick { cpu, token } });
                    }
                    _ => list.read += 1,
                }
            }
            let mut ticks = self.lists.pop_front().expect("a front list").ticks;
            ticks.clear();
            self.spare.push(ticks);
        }
    }

    /// Take the tick `peek` returned.
    fn pop_peeked(&mut self, cpu: u32) {
        self.queued[cpu as usize] = None;
        self.len -= 1;
        if let Some(front) = self.lists.front_mut() {
            front.read += 1;
        }
    }

    /// Drop the queued ticks `live` rejects.
    fn retain(&mut self, mut live: impl FnMut(&Event) -> bool) {
        for (cpu, queued) in self.queued.iter_mut().enumerate() {
            if let Some((_, token)) = *queued {
                if !live(&Event::Tick { cpu: cpu as u32, token }) {
                    *queued = None;
                    self.len -= 1;
                }
            }
        }
        let queued = &self.queued;
        for list in self.lists.iter_mut() {
            list.ticks.drain(..list.read);
            list.read = 0;
            list.ticks.retain(|&(seq, cpu)| queued[cpu as usize].is_some_and(|(q, _)| q == seq));
        }
    }
}

/// A tournament tree over the slots: each leaf holds one slot's key, or none, and each inner
/// node the smallest key below it. Setting or emptying a slot replays the matches on its path
/// to the root that can change, at most log2(slots).
///
/// A node is one number: the entry's (time, seq) with the slot in its low [`SLOT_BITS`] bits,
/// `(time << 64) | (seq << SLOT_BITS) | slot`, ordered as (time, seq) are (a seq is never
/// reused, so the slot never decides), and copied up the tree in one move. An empty slot's
/// node is [`EMPTY`] with its slot, above every entry's.
#[derive(Default)]
struct SlotTree {
    /// The root at 1, slot s's leaf at `events.len() + s`.
    nodes: Vec<u128>,
    events: Vec<Event>,
    len: usize,
    /// The slot popped last, while its matches are still to be replayed: its leaf is empty,
    /// but every node on its path still names it with the key it was popped with. That key
    /// is below every other key in the tree and every key set after it (the smallest of the
    /// tree then; later ones are at the same time or later, with a larger seq), so those
    /// nodes are what the tree without the slot would hold everywhere else, and sets of other
    /// slots stay exact around them. The replay waits for the next peek, or for the slot's
    /// own next key: a CPU whose segment ended usually starts its next one in the same event,
    /// and one replay with the new key then does the work of two.
    popped: Option<usize>,
}

const NO_KEY: u128 = u128::MAX;

/// Bits of a tree node that name its slot: up to 65,536 CPUs, and 2^48 events scheduled in a
/// run (years of wall time).
const SLOT_BITS: u32 = 16;
const SLOT_MASK: u128 = (1 << SLOT_BITS) - 1;
/// Every node at or above this is an empty slot's.
const EMPTY: u128 = !SLOT_MASK;

/// An entry's (time, seq) as one number, ordered as the pair is.
fn key(e: &Entry) -> u128 {
    ((e.time as u128) << 64) | e.seq as u128
}

/// The slot a tree node names.
fn holder(node: u128) -> usize {
    (node & SLOT_MASK) as usize
}

impl SlotTree {
    fn len(&self) -> usize {
        self.len
    }

    fn peek(&mut self) -> Option<Entry> {
        self.settle();
        let &k = self.nodes.get(1)?;
        (k < EMPTY).then(|| Entry {
            time: (k >> 64) as TimeNs,
            seq: (k as u64) >> SLOT_BITS,
            event: self.events[holder(k)],
        })
    }

    fn set(&mut self, slot: usize, entry: Entry) {
        assert!(entry.seq < 1 << (64 - SLOT_BITS), "more events than a run can schedule");
        if slot >= self.events.len() {
            self.grow(slot + 1);
        }
        self.events[slot] = entry.event;
        let node = ((entry.time as u128) << 64) | ((entry.seq as u128) << SLOT_BITS) | slot as u128;
        if self.popped == Some(slot) {
            // The path still names the slot with its popped key: replay it with the new one.
            self.popped = None;
            self.nodes[self.events.len() + slot] = node;
            self.replay_from(slot);
            self.len += 1;
        } else if self.store(slot, node) >= EMPTY {
            self.len += 1;
        }
    }

    /// Take the earliest entry; its slot's matches are replayed later (see `popped`).
    fn pop(&mut self) -> Option<Entry> {
        let entry = self.peek()?;
        let slot = holder(self.nodes[1]);
        self.nodes[self.events.len() + slot] = EMPTY | slot as u128;
        self.popped = Some(slot);
        self.len -= 1;
        Some(entry)
    }

    /// Replay the matches of the slot popped last, if not done yet.
    fn settle(&mut self) {
        if let Some(slot) = self.popped.take() {
            self.replay_from(slot);
        }
    }

    /// Replay the matches `slot` was winning, from its leaf up, after its key grew or went.
    fn replay_from(&mut self, slot: usize) {
        let mut node = (self.events.len() + slot) / 2;
        while node >= 1 && holder(self.nodes[node]) == slot {
            // Both children read, the smaller kept without a branch on which side the slot
            // is (a branch there mispredicts half the time).
            self.nodes[node] = self.nodes[2 * node].min(self.nodes[2 * node + 1]);
            node /= 2;
        }
    }

    /// Empty the slots whose events `live` rejects.
    fn retain(&mut self, mut live: impl FnMut(&Event) -> bool) {
        self.settle();
        let leaves = self.events.len();
        for slot in 0..leaves {
            if self.nodes[leaves + slot] < EMPTY && !live(&self.events[slot]) {
                self.store(slot, EMPTY | slot as u128);
                self.len -= 1;
            }
        }
    }

    /// Room for `slots` slots (a power of two of them, so that the tree is complete).
    fn grow(&mut self, slots: usize) {
        self.settle();
        let old = self.events.len();
        let n = slots.next_power_of_two().max(2);
        assert!(n <= 1 << SLOT_BITS, "{slots} CPUs: at most {} are simulated", 1 << SLOT_BITS);
        let mut nodes = vec![0; 2 * n];
        for slot in 0..n {
            nodes[n + slot] = if slot < old { self.nodes[old + slot] } else { EMPTY | slot as u128 };
        }
        for i in (1..n).rev() {
            nodes[i] = nodes[2 * i].min(nodes[2 * i + 1]);
        }
        self.nodes = nodes;
        self.events.resize(n, Event::End);
    }

    /// Give `slot` the node `new`, returning its old one, and replay its matches up the path
    /// for as long as they can change: a smaller key climbs while it wins; a larger one (or
    /// none) only unsettles the nodes the slot was winning, and nothing above the first it
    /// was not.
    fn store(&mut self, slot: usize, new: u128) -> u128 {
        let leaf = self.events.len() + slot;
        let old = std::mem::replace(&mut self.nodes[leaf], new);
        if new < old {
            let mut node = leaf / 2;
            while node >= 1 {
                let held = self.nodes[node];
                if holder(held) != slot && held < new {
                    break;
                }
                self.nodes[node] = new;
                node /= 2;
            }
        } else {
            self.replay_from(slot);
        }
        old
    }
}

#[derive(Default)]
pub struct EventQueue {
    /// Events of the kinds without a slot.
    heap: BinaryHeap<Entry>,
    /// Each CPU's run-segment end.
    slots: SlotTree,
    ticks: TickLists,
    seq: u64,
    now: TimeNs,
}

impl EventQueue {
    pub fn now(&self) -> TimeNs {
        self.now
    }

    /// Events scheduled and not yet popped (stale ones included until swept or superseded).
    pub fn len(&self) -> usize {
        self.heap.len() + self.slots.len() + self.ticks.len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keep only the events `live` accepts.
    pub fn retain(&mut self, mut live: impl FnMut(&Event) -> bool) {
        self.heap.retain(|e| live(&e.event));
        self.slots.retain(&mut live);
        self.ticks.retain(live);
    }

    /// Schedule `event` at `time`. Scheduling into the past is a bug in the caller. A run
    /// segment's end or a tick replaces the CPU's previous one of its kind, which its owner
    /// has already made stale by moving its token on.
    pub fn push(&mut self, time: TimeNs, event: Event) {
        debug_assert!(time >= self.now, "event {event:?} scheduled at {time} before now {}", self.now);
        let time = time.max(self.now);
        self.seq += 1;
        let entry = Entry { time, seq: self.seq, event };
        match event {
            Event::Tick { cpu, token } => self.ticks.push(time, self.seq, cpu, token),
            _ => match slot_of(&event) {
                Some(slot) => self.slots.set(slot, entry),
                None => self.heap.push(entry),
            },
        }
    }

    pub fn pop(&mut self) -> Option<(TimeNs, Event)> {
        // No event has the key NO_KEY: it stands for an empty queue.
        let tick = self.ticks.peek();
        let slot = self.slots.peek();
        let (tick_key, slot_key) = (tick.as_ref().map_or(NO_KEY, key), slot.as_ref().map_or(NO_KEY, key));
        let heap_key = self.heap.peek().map_or(NO_KEY, key);
        let e = match (tick, slot) {
            (Some(t), _) if tick_key < slot_key && tick_key < heap_key => {
                if let Event::Tick { cpu, .. } = t.event {
                    self.ticks.pop_peeked(cpu);
                }
                t
            }
            (_, Some(_)) if slot_key < heap_key => self.slots.pop()?,
            _ => self.heap.pop()?,
        };
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

    #[test]
    fn a_cpus_new_segment_end_or_tick_supersedes_its_last() {
        let mut q = EventQueue::default();
        q.push(30, Event::SegmentEnd { cpu: 0, token: 1 });
        q.push(20, Event::Tick { cpu: 0, token: 1 });
        q.push(25, Event::RaplSample);
        // A later end and an earlier tick replace the first ones; CPU 1's are its own.
        q.push(40, Event::SegmentEnd { cpu: 0, token: 2 });
        q.push(10, Event::Tick { cpu: 0, token: 2 });
        q.push(30, Event::SegmentEnd { cpu: 1, token: 1 });
        assert_eq!(q.len(), 4);
        let order: Vec<(TimeNs, Event)> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (10, Event::Tick { cpu: 0, token: 2 }),
                (25, Event::RaplSample),
                (30, Event::SegmentEnd { cpu: 1, token: 1 }),
                (40, Event::SegmentEnd { cpu: 0, token: 2 }),
            ]
        );
        assert!(q.is_empty());
    }

    /// Against a plain list that drops a CPU's previous event of the same kind and pops the
    /// smallest (time, seq): random pushes, pops and sweeps, with equal times and
    /// supersessions.
    #[test]
    fn pops_in_the_order_of_a_reference_list() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        let mut q = EventQueue::default();
        let mut reference: Vec<(TimeNs, u64, Event)> = Vec::new();
        let mut seq = 0;
        let token = |e: &Event| match *e {
            Event::SegmentEnd { token, .. } | Event::Tick { token, .. } | Event::TimerWake { token, .. } => token,
            _ => 0,
        };
        for step in 0..20_000u32 {
            if rng.gen_bool(0.01) {
                // A sweep: events made stale (here, every seventh token) go.
                q.retain(|e| token(e) % 7 != 0);
                reference.retain(|(_, _, e)| token(e) % 7 != 0);
            } else if rng.gen_bool(0.55) {
                let time = q.now() + rng.gen_range(0..50);
                let cpu = rng.gen_range(0..6);
                let event = match rng.gen_range(0..3) {
                    0 => Event::SegmentEnd { cpu, token: step },
                    1 => Event::Tick { cpu, token: step },
                    _ => Event::TimerWake { task: cpu, token: step },
                };
                seq += 1;
                // A CPU's run-segment end or tick supersedes its last of the same kind.
                let owner = |e: &Event| match *e {
                    Event::SegmentEnd { cpu, .. } => Some((0, cpu)),
                    Event::Tick { cpu, .. } => Some((1, cpu)),
                    _ => None,
                };
                if let Some(o) = owner(&event) {
                    reference.retain(|(_, _, e)| owner(e) != Some(o));
                }
                reference.push((time, seq, event));
                q.push(time, event);
            } else {
                let first = reference.iter().enumerate().min_by_key(|(_, (t, s, _))| (*t, *s)).map(|(i, _)| i);
                let expected = first.map(|i| reference.remove(i)).map(|(t, _, e)| (t, e));
                assert_eq!(q.pop(), expected, "step {step}");
            }
            assert_eq!(q.len(), reference.len());
        }
    }
}
