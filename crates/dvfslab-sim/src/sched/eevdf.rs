//! EEVDF, the fair class's rule from Linux 6.6 (kernel/sched/fair.c): the arithmetic of
//! virtual lag, eligibility and virtual deadlines on one run-queue, with no simulator state.
//! `sched/fair.rs` applies it to the simulator's run-queues.
//!
//! ```text
//!   v_i   += Δt·1024/w_i               a task's virtual runtime runs slower the heavier its
//!                                      weight (its nice value's)   (update_curr, calc_delta_fair)
//!   V      = Σ w_i·v_i / Σ w_i         over the run-queue's tasks, the running one included,
//!                                      rounded down                         (avg_vruntime)
//!   lag_i  = V − v_i                   the service task i is owed; it may run while ≥ 0
//!                                                                           (entity_eligible)
//!   d_i    = v_i + slice·1024/w_i      its virtual deadline; renewed when v_i reaches it
//!                                                                           (update_deadline)
//!   pick   = the eligible task with the earliest deadline                   (pick_eevdf)
//!   place  v_i = V − lag_i·(W + w_i)/W a waking task keeps the lag it left with: W is the
//!                                      run-queue's weight without it, and the factor makes up
//!                                      for its own weight pulling V towards it (place_entity)
//! ```
//!
//! A task leaves with its lag clamped to ±limit·1024/w (update_entity_lag). The running task
//! keeps the CPU against a waking one while it is eligible and has not used the slice it was
//! picked with (RUN_TO_PARITY). Since 6.12 a task that blocks while not eligible stays queued
//! until it is picked or woken (DELAY_DEQUEUE), and then leaves or comes back with its lag, a
//! positive one dropped (DELAY_ZERO).

use crate::kernel::KernelVersion;

/// Where every run-queue's virtual time starts, ns: far enough from zero that a task placed
/// with a positive lag on a young run-queue keeps a vruntime above zero (the kernel's are
/// wrapping u64s compared as differences; the simulator's are plain u64s).
pub(crate) const VRUNTIME_ORIGIN: u64 = 1 << 40;

/// When the running task's accounting asks for a reschedule with other tasks queued, besides
/// its deadline being renewed (update_curr).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resched {
    /// 6.6–6.11: only a renewed deadline (update_deadline's resched_curr).
    Deadline,
    /// 6.12–6.16: also a task that has used the slice it was picked with and is no longer
    /// eligible (did_preempt_short, whatever the slices).
    Ineligible,
    /// From 6.17: also any task past the vruntime its pick protected (!protect_slice).
    Unprotected,
}

/// How sched_yield treats the fair class's task (yield_task_fair).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Yield {
    /// 6.6–6.17: its deadline moves one slice later.
    PushDeadline,
    /// 6.18: an eligible task forfeits its remaining vruntime: vruntime jumps to its deadline,
    /// which is then renewed.
    Forfeit,
}

/// The EEVDF rules of a kernel version, and its tunables on a machine of `ncpus` CPUs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Rules {
    /// sysctl_sched_base_slice: 0.75 ms (0.7 ms from 6.15) × (1 + log2 of the CPUs, at most 8),
    /// the default SCHED_TUNABLESCALING_LOG.
    pub slice_ns: u64,
    /// The bound on a leaving task's lag: max(2·slice, TICK_NSEC) before 6.18, the run-queue's
    /// largest slice + TICK_NSEC from 6.18 (entity_lag with cfs_rq_max_slice, as 6.18's stable
    /// releases have it, the recordings' 6.18.44 among them; 6.18.0 still had the first
    /// bound). Every slice is the base one here.
    pub lag_limit_ns: u64,
    /// Before 6.8 the running task wins a tie of deadlines against a queued one; from 6.8,
    /// when the tree is sorted by deadline, it must be strictly earlier.
    pub curr_wins_ties: bool,
    /// DELAY_DEQUEUE and DELAY_ZERO (6.12).
    pub delay_dequeue: bool,
    /// PLACE_REL_DEADLINE (6.12): a task moved to another CPU keeps its deadline relative to
    /// its vruntime.
    pub rel_deadline: bool,
    pub resched: Resched,
    /// How a pick's protection is read (RUN_TO_PARITY): before 6.17 the task still has the
    /// deadline it was picked with (the pick stashes it in vlag); from 6.17 its vruntime is
    /// below the protected one (vprot, the deadline at the pick for equal slices).
    pub protect_by_vruntime: bool,
    pub yield_rule: Yield,
    /// wake_affine_idle's "the waker runs alone" counts delayed tasks (6.12–6.13); from 6.14
    /// it leaves them out (cfs_h_nr_delayed).
    pub affine_counts_delayed: bool,
    /// The wake-up check as the 6.18 stable series reworked it (check_preempt_wakeup_fair
    /// after "Reimplement NEXT_BUDDY to align with EEVDF goals", e837456fdca8, and "Fix
    /// wakeup_preempt_fair() vs delayed dequeue", ac8e69e69363; mainline after 6.18): it
    /// returns before the pick for a fork's wake-up (WF_FORK), so a forked task waits its turn,
    /// and its pick is pick_next_entity's, which dequeues a delayed task it picks and picks
    /// again. NEXT_BUDDY stays off there (under the recordings' kernel a pipe's sync wake-up
    /// preempts a writer that ran longer, which the rework's WF_SYNC rule under NEXT_BUDDY
    /// would hold back), and the update took the revert of the rework's forced preemption of
    /// an ineligible waker with it (15257cc2f905), so the rest of the check is mainline's.
    pub reworked_wakeup_check: bool,
    /// can_migrate_task's soft limit on ineligible tasks (task_is_ineligible_on_dst_cpu,
    /// 6.14): until the domain's balancing fails, a waiting task that is not eligible where
    /// it waits stays there when the destination has tasks at its level.
    pub balance_keeps_ineligible: bool,
    /// A balance moves a delayed task only when it moves load (can_migrate_task, "sched/fair:
    /// Do not try to migrate delayed dequeue task", 6.14); 6.12–6.13 balances move one in any.
    pub balance_moves_delayed_only_with_load: bool,
}

/// The first stable update of each series with the reworked wake-up check: 6.18.33 took the
/// rework, its delayed-dequeue fix and the revert of its forced preemption together (the stable
/// tree's push of Linux 6.18.33, May 2026). The 6.12 series has not: 6.12.118 (Debian's
/// linux-source-6.12) still has mainline's check, PREEMPT_SHORT's cancel and all. Checked under
/// the recordings' kernel (6.18.44): a child forked by a parent pinned with it never ran before
/// the parent returned from fork in 400 forks, after 0.5 or 3 ms of the parent's work, where
/// mainline 6.18's rule would let it after 3 ms; and in gitsource a child forked onto its
/// parent's busy CPU preempts it at once in 6 of ~1,450 forks (the model without the rule: 97
/// of ~900).
const WAKEUP_REWORK_FIRST_STABLE: [KernelVersion; 1] = [KernelVersion(6, 18, 33)];

impl Rules {
    /// The rules of `kernel`, or None before 6.6 (CFS).
    pub(crate) fn for_kernel(kernel: KernelVersion, ncpus: usize, tick_ns: u64) -> Option<Rules> {
        let v = |major, minor| kernel >= KernelVersion(major, minor, 0);
        if !v(6, 6) {
            return None;
        }
        let factor = 1 + (ncpus.clamp(1, 8) as u64).ilog2() as u64;
        let base_ns = if v(6, 15) { 700_000 } else { 750_000 };
        let slice_ns = base_ns * factor;
        let lag_limit_ns = if v(6, 18) { slice_ns + tick_ns } else { (2 * slice_ns).max(tick_ns) };
        Some(Rules {
            slice_ns,
            lag_limit_ns,
            curr_wins_ties: !v(6, 8),
            delay_dequeue: v(6, 12),
            rel_deadline: v(6, 12),
            resched: if v(6, 17) {
                Resched::Unprotected
            } else if v(6, 12) {
                Resched::Ineligible
            } else {
                Resched::Deadline
            },
            protect_by_vruntime: v(6, 17),
            yield_rule: if v(6, 18) { Yield::Forfeit } else { Yield::PushDeadline },
            affine_counts_delayed: !v(6, 14),
            reworked_wakeup_check: kernel.has_backport(&WAKEUP_REWORK_FIRST_STABLE),
            balance_keeps_ineligible: v(6, 14),
            balance_moves_delayed_only_with_load: v(6, 14),
        })
    }

    /// Whether a running task at `vruntime` with `deadline`, picked when its deadline was
    /// `picked`, is still protected by its pick.
    pub(crate) fn protected(&self, vruntime: u64, deadline: u64, picked: u64) -> bool {
        if self.protect_by_vruntime {
            vruntime < picked
        } else {
            deadline == picked
        }
    }

    /// A new deadline from vruntime `v` for a task of `weight`: one slice on in its virtual
    /// time, half of one for a task just forked (PLACE_DEADLINE_INITIAL: the others are on
    /// average halfway through theirs).
    pub(crate) fn deadline(&self, v: u64, weight: u64, initial: bool) -> u64 {
        let vslice = calc_delta_fair(self.slice_ns, weight);
        v + if initial { vslice / 2 } else { vslice }
    }

    /// The bound on the lag a task of `weight` leaves with, in its virtual time.
    pub(crate) fn lag_limit(&self, weight: u64) -> u64 {
        calc_delta_fair(self.lag_limit_ns, weight)
    }
}

/// Σ w·v and Σ w over a set of tasks: enough for V and for any task's eligibility, exactly
/// (the kernel keeps the same sums relative to a reference vruntime to stay within 64 bits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Load {
    wv: i128,
    w: i128,
}

impl Load {
    pub(crate) fn add(&mut self, v: u64, w: u64) {
        self.wv += w as i128 * v as i128;
        self.w += w as i128;
    }

    pub(crate) fn sub(&mut self, v: u64, w: u64) {
        self.wv -= w as i128 * v as i128;
        self.w -= w as i128;
        debug_assert!(self.w >= 0, "a task left a run-queue it was not counted in");
    }

    /// These tasks and one more.
    pub(crate) fn with(mut self, v: u64, w: u64) -> Load {
        self.add(v, w);
        self
    }

    pub(crate) fn weight(&self) -> u64 {
        self.w as u64
    }

    /// V rounded down, or None for no task (avg_vruntime: its division rounds towards minus
    /// infinity, so that V itself is always eligible).
    pub(crate) fn avg_vruntime(&self) -> Option<u64> {
        (self.w > 0).then(|| self.wv.div_euclid(self.w) as u64)
    }

    /// Whether a task at `v` is owed service: v ≤ V, compared without the division
    /// (vruntime_eligible). With no task at all, anything is.
    pub(crate) fn eligible(&self, v: u64) -> bool {
        self.wv >= v as i128 * self.w
    }
}

/// A run-queue's fair tasks besides the running one, by deadline, with their load: the
/// kernel's tree (sorted by deadline from 6.8; the order only serves the pick here). Equal
/// deadlines keep the order the tasks joined in, as the kernel's tree puts a new entity after
/// those of an equal key (rb_add_cached), so that pick_eevdf takes the earliest of them.
#[derive(Clone, Debug, Default)]
pub(crate) struct Queue {
    pub load: Load,
    /// (deadline, when it joined: [`Queue::insert`]'s count, task).
    pub by_deadline: std::collections::BTreeSet<(u64, u64, usize)>,
    joined: u64,
    /// How many of them are delayed (blocked, still queued).
    pub delayed: usize,
}

impl Queue {
    /// Queue `task`; the place it takes among equal deadlines, which [`Queue::remove`] needs.
    pub(crate) fn insert(&mut self, task: usize, v: u64, deadline: u64, w: u64) -> u64 {
        self.joined += 1;
        let new = self.by_deadline.insert((deadline, self.joined, task));
        debug_assert!(new, "task {task} queued twice");
        self.load.add(v, w);
        self.joined
    }

    pub(crate) fn remove(&mut self, task: usize, joined: u64, v: u64, deadline: u64, w: u64) {
        let was = self.by_deadline.remove(&(deadline, joined, task));
        debug_assert!(was, "task {task} was not queued with that deadline");
        self.load.sub(v, w);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.by_deadline.is_empty()
    }
}

/// A nice-0 weight (NICE_0_LOAD after scale_load_down).
pub(crate) const NICE_0: u64 = 1024;

/// Virtual time for `ns` of real time (or of slice) at `weight`: ns·1024/weight, the identity
/// at nice 0 (calc_delta_fair; the kernel multiplies by a fixed-point inverse of the weight,
/// within a nanosecond of this division).
pub(crate) fn calc_delta_fair(ns: u64, weight: u64) -> u64 {
    if weight == NICE_0 {
        return ns;
    }
    (ns as u128 * NICE_0 as u128 / weight.max(1) as u128) as u64
}

/// The lag a task at `v` leaves a run-queue of average `avg` with, clamped to ±`limit_ns`, a
/// virtual time ([`Rules::lag_limit`]; update_entity_lag).
pub(crate) fn clamped_lag(avg: u64, v: u64, limit_ns: u64) -> i64 {
    let limit = limit_ns.min(i64::MAX as u64) as i64;
    (avg as i128 - v as i128).clamp(-(limit as i128), limit as i128) as i64
}

/// The vruntime place_entity gives a task of weight `w` and lag `vlag` joining a run-queue of
/// average `avg` and weight `others_w` without it: V − vlag·(W + w)/W, the product divided
/// with truncation towards zero (div_s64). An empty run-queue takes the task at V, whatever
/// its lag.
pub(crate) fn placed_vruntime(avg: u64, vlag: i64, others_w: u64, w: u64) -> u64 {
    if others_w == 0 {
        return avg;
    }
    let lag = vlag as i128 * (others_w + w) as i128 / others_w as i128;
    (avg as i128 - lag).max(0) as u64
}

/// A task as the pick sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entity {
    pub task: usize,
    pub vruntime: u64,
    pub deadline: u64,
}

/// The running task as the pick sees it: `protected` while it has not used the slice it was
/// picked with (RUN_TO_PARITY: the deadline it was picked with still stands, or from 6.17 its
/// vruntime is below the protected one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Running {
    pub entity: Entity,
    pub protected: bool,
}

/// pick_eevdf: the eligible task with the earliest deadline among `queued` (in deadline
/// order) and the running task, eligibility judged against `load` (every one of them,
/// the running task included). A running task that is eligible and protected keeps the CPU
/// when `protect` asks for it. None when nothing is eligible (no task at all).
pub(crate) fn pick(
    load: &Load,
    queued: impl IntoIterator<Item = Entity>,
    running: Option<Running>,
    protect: bool,
    curr_wins_ties: bool,
) -> Option<usize> {
    let running = running.filter(|r| load.eligible(r.entity.vruntime));
    if let Some(r) = running.filter(|r| protect && r.protected) {
        return Some(r.entity.task);
    }
    let best = queued.into_iter().find(|e| load.eligible(e.vruntime));
    match (running, best) {
        (Some(r), Some(b)) => {
            let curr_first = r.entity.deadline < b.deadline || (curr_wins_ties && r.entity.deadline == b.deadline);
            Some(if curr_first { r.entity.task } else { b.task })
        }
        (Some(r), None) => Some(r.entity.task),
        (None, b) => b.map(|b| b.task),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: u64 = NICE_0;

    #[test]
    fn equal_deadlines_are_picked_in_the_order_their_tasks_joined() {
        // Tasks woken together at V, all lag 0, get one deadline: the kernel's tree puts each
        // after those already there, so the first to join is picked, whatever its id; one that
        // leaves and comes back goes behind the others.
        let mut q = Queue::default();
        let joined: Vec<u64> = [7, 3, 5].iter().map(|&t| q.insert(t, 100, 1_500, W)).collect();
        let first = |q: &Queue| {
            let queued = q.by_deadline.iter().map(|&(deadline, _, task)| Entity { task, vruntime: 100, deadline });
            pick(&q.load, queued, None, true, false)
        };
        assert_eq!(first(&q), Some(7));
        q.remove(7, joined[0], 100, 1_500, W);
        q.insert(7, 100, 1_500, W);
        assert_eq!(first(&q), Some(3));
        // An earlier deadline still comes first.
        q.insert(9, 100, 1_400, W);
        assert_eq!(first(&q), Some(9));
    }

    fn load(vs: &[u64]) -> Load {
        vs.iter().fold(Load::default(), |l, &v| l.with(v, W))
    }

    #[test]
    fn v_is_the_weighted_mean_rounded_down() {
        assert_eq!(load(&[100, 200]).avg_vruntime(), Some(150));
        assert_eq!(load(&[100, 201]).avg_vruntime(), Some(150));
        assert_eq!(load(&[]).avg_vruntime(), None);
        // A heavier task pulls V towards it: (2·100 + 1·400) / 3 = 200.
        let l = Load::default().with(100, 2 * W).with(400, W);
        assert_eq!(l.avg_vruntime(), Some(200));
    }

    #[test]
    fn a_task_is_eligible_at_or_below_v_and_the_sums_are_exact() {
        let l = load(&[100, 201]);
        // V = 150.5: 150 is eligible, 151 is not, though V rounds down to 150.
        assert!(l.eligible(150));
        assert!(!l.eligible(151));
        // Of two tasks, the one behind is eligible and the one ahead is not; V itself is.
        assert!(l.eligible(100) && !l.eligible(201));
        let v = l.avg_vruntime().unwrap();
        assert!(l.eligible(v));
        // Removing a task restores the sums.
        let mut m = l;
        m.sub(201, W);
        assert_eq!(m, load(&[100]));
    }

    #[test]
    fn placement_keeps_the_lag_a_task_left_with() {
        // A task left with lag 300 joins one task at V = 1000: it is placed 600 behind, so
        // that V moves to 700 and the lag it finds is 700 − 400 = 300 again.
        let v = placed_vruntime(1000, 300, W, W);
        assert_eq!(v, 400);
        let after = load(&[1000, v]);
        assert_eq!(after.avg_vruntime().unwrap() as i64 - v as i64, 300);
        // With three tasks already there the inflation is 4/3: 300 → 400.
        assert_eq!(placed_vruntime(1000, 300, 3 * W, W), 600);
        // A negative lag places it ahead; division truncates towards zero, as div_s64 does.
        assert_eq!(placed_vruntime(1000, -301, 3 * W, W), 1401);
        // An empty run-queue takes it at V whatever its lag.
        assert_eq!(placed_vruntime(1000, 300, 0, W), 1000);
    }

    #[test]
    fn a_leaving_tasks_lag_is_clamped_both_ways() {
        assert_eq!(clamped_lag(1000, 900, 4_000), 100);
        assert_eq!(clamped_lag(1000, 9_000, 4_000), -4_000);
        assert_eq!(clamped_lag(10_000, 1_000, 4_000), 4_000);
    }

    fn e(task: usize, vruntime: u64, deadline: u64) -> Entity {
        Entity { task, vruntime, deadline }
    }

    #[test]
    fn the_pick_is_the_eligible_task_with_the_earliest_deadline() {
        // Tasks 1 and 2 behind V = 200, task 3 ahead; task 3 has the earliest deadline but
        // is not eligible, so task 2 (deadline 400) goes before task 1 (deadline 500).
        let queued = [e(3, 300, 350), e(2, 150, 400), e(1, 150, 500)];
        let l = load(&[300, 150, 150]);
        assert_eq!(pick(&l, queued, None, true, false), Some(2));
        assert_eq!(pick(&Load::default(), [], None, true, false), None);
    }

    #[test]
    fn a_protected_running_task_keeps_the_cpu_until_it_is_ineligible() {
        let waking = e(2, 100, 1_600);
        let curr = |vruntime, protected| Running { entity: e(1, vruntime, 1_500), protected };
        // The running task at 100 ties with the woken one (both eligible) and has the
        // earlier deadline: it keeps the CPU, protected or not.
        let l = load(&[100, 100]);
        assert_eq!(pick(&l, [waking], Some(curr(100, true)), true, false), Some(1));
        assert_eq!(pick(&l, [waking], Some(curr(100, false)), true, false), Some(1));
        // Ahead of the woken task it is not eligible: the woken one preempts it, protection
        // or not.
        let l = load(&[130, 100]);
        assert_eq!(pick(&l, [waking], Some(curr(130, true)), true, false), Some(2));
        // A woken task with an earlier deadline preempts an eligible running task only once
        // the latter has used its slice (or when protection is not asked for).
        let early = e(2, 100, 1_200);
        let l = load(&[100, 100]);
        assert_eq!(pick(&l, [early], Some(curr(100, true)), true, false), Some(1));
        assert_eq!(pick(&l, [early], Some(curr(100, false)), true, false), Some(2));
        assert_eq!(pick(&l, [early], Some(curr(100, true)), false, false), Some(2));
    }

    #[test]
    fn equal_deadlines_went_to_the_running_task_before_6_8() {
        let queued = [e(2, 100, 1_500)];
        let running = Some(Running { entity: e(1, 100, 1_500), protected: false });
        let l = load(&[100, 100]);
        assert_eq!(pick(&l, queued, running, true, true), Some(1));
        assert_eq!(pick(&l, queued, running, true, false), Some(2));
        let rules = |k| Rules::for_kernel(k, 2, 4_000_000).unwrap();
        assert!(rules(KernelVersion(6, 7, 0)).curr_wins_ties);
        assert!(!rules(KernelVersion(6, 8, 0)).curr_wins_ties);
    }

    #[test]
    fn the_rules_follow_the_kernel_versions() {
        assert_eq!(Rules::for_kernel(KernelVersion(6, 5, 0), 2, 4_000_000), None);
        let r66 = Rules::for_kernel(KernelVersion(6, 6, 0), 2, 4_000_000).unwrap();
        // 0.75 ms × (1 + log2 2); the lag bound is the tick's 4 ms, above two slices.
        assert_eq!(r66.slice_ns, 1_500_000);
        assert_eq!(r66.lag_limit_ns, 4_000_000);
        assert_eq!((r66.delay_dequeue, r66.resched), (false, Resched::Deadline));
        let r612 = Rules::for_kernel(KernelVersion(6, 12, 0), 8, 1_000_000).unwrap();
        // 0.75 ms × 4 at 8 CPUs; two slices exceed a 1 ms tick.
        assert_eq!((r612.slice_ns, r612.lag_limit_ns), (3_000_000, 6_000_000));
        assert!(r612.delay_dequeue && r612.rel_deadline && r612.affine_counts_delayed);
        assert_eq!(r612.resched, Resched::Ineligible);
        let r614 = Rules::for_kernel(KernelVersion(6, 14, 0), 2, 4_000_000).unwrap();
        assert!(!r614.affine_counts_delayed);
        // The balancer's soft limit on ineligible tasks from 6.14 (not in the 6.12 series).
        assert!(r614.balance_keeps_ineligible && !r612.balance_keeps_ineligible);
        assert!(r614.balance_moves_delayed_only_with_load && !r612.balance_moves_delayed_only_with_load);
        let r618 = Rules::for_kernel(KernelVersion(6, 18, 0), 64, 4_000_000).unwrap();
        // 0.7 ms × 4 (the scaling stops at 8 CPUs); the lag bound is a slice plus a tick.
        assert_eq!((r618.slice_ns, r618.lag_limit_ns), (2_800_000, 6_800_000));
        assert_eq!((r618.resched, r618.yield_rule), (Resched::Unprotected, Yield::Forfeit));
        assert_eq!(r618.deadline(1_000, W, true), 1_000 + 1_400_000);
        // Mainline's wake-up check up to 6.18.32, the reworked one from 6.18.33.
        assert!(!r618.reworked_wakeup_check && !r612.reworked_wakeup_check);
        let r618_44 = Rules::for_kernel(KernelVersion(6, 18, 44), 64, 4_000_000).unwrap();
        assert!(r618_44.reworked_wakeup_check);
        assert!(!Rules::for_kernel(KernelVersion(6, 18, 32), 64, 4_000_000).unwrap().reworked_wakeup_check);
        // The 6.12 series kept mainline's check (read at 6.12.118).
        assert!(!Rules::for_kernel(KernelVersion(6, 12, 118), 2, 4_000_000).unwrap().reworked_wakeup_check);
    }
}
