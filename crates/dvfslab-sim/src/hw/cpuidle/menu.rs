//! The menu cpuidle governor (`drivers/cpuidle/governors/menu.c`), read at 4.7 – 6.18 and in
//! the 6.1, 6.12 and 6.18 stable series: it predicts the idle duration as the sooner of a
//! timer-based estimate and the "typical interval" of the last eight idle periods, then takes
//! the deepest state whose target residency fits the prediction and whose exit latency fits
//! its cap.
//!
//! Followed as the source has it, by version ([`Rules`]): the recent intervals in µs, zero
//! until filled (`menu_enable_device`); the measured residency less the declared exit latency,
//! or halved when under twice that latency, and no longer than the timer seen at selection
//! (`menu_update`); `get_typical_interval` in its forms (below 6.15 the two-pass variance
//! dropping the largest samples, from 6.6 no prediction from an all-zero history; 6.15+
//! one-pass variance dropping outliers at either end; returning the largest sample left when
//! unsure in 6.15 – 6.17 and in the stable updates that took that rule); 6.6+'s skipping of
//! the timer under RESIDENCY_THRESHOLD_NS; the polling override and exit-latency caps by
//! version; and from 4.17 the retained tick (`menu_select`'s `stop_tick` and `delta_tick`).
//!
//! One stand-in: menu scales the time to the next timer by a per-bucket correction factor
//! (`next_timer_ns · correction_factor[bucket]`), which learns the ratio of measured idle to
//! that timer. The simulated CPUs have no timer horizon when nothing is due (the kernel always
//! has one, and the factor's integer floor of 7/8192 makes the horizon itself the estimate on
//! long-idle buckets), so the estimate here is the sooner of the next timer and a running
//! average of the measured idle periods (weight 1/8, menu's DECAY): what the factor converges
//! to. docs/model.md says why. Also left out: the tick wake-ups that decide when menu stops
//! a retained tick are not kept in the history afterwards (with the stand-in and no timer
//! horizon, keeping them sends short-idle loads deep; docs/model.md), the poll time limit
//! (4.17+), PM QoS (no constraint is set), and 5.0 – 6.5's early return when the shortest
//! sample exceeds the timer-based estimate, which changes no choice (the minimum of the two
//! is taken anyway). Rules that never apply here: a selection with the tick already stopped
//! (every simulated idle entry follows a task; "Always check timers with tick stopped", in
//! 6.12.75+), a state the driver rejected ("Avoid using invalid recent intervals data", in
//! 6.1.157+ and 6.12.43+), and the idle loop's skipping of the governor on a one-state table
//! (6.1.165+, 6.12.75+), which moves only the tick, not the state.

use super::{IdleChoice, IdleGovernor, IdleInputs};
use crate::engine::TimeNs;
use crate::hw::platform::{IdlePower, IdleStateFile, IdleTiming};
use crate::kernel::KernelVersion;

/// Idle periods remembered (menu's INTERVALS).
pub(crate) const INTERVALS: usize = 8;
/// What menu records for an idle period a retained tick cut short: 9/10 of MAX_INTERESTING
/// (50 ms), when the timer seen at selection was more than a tick away.
const TICK_WAKEUP_SAMPLE_NS: u64 = 45_000_000;
/// From 6.6 a typical interval this short skips the timer (RESIDENCY_THRESHOLD_NS, gov.h); in
/// later stable updates it also bounds the physical state that replaces a poll.
const RESIDENCY_THRESHOLD_NS: u64 = 15_000;
/// The first stable update of each series whose `get_typical_interval` returns the largest
/// sample left when unsure, as Debian's changelogs of its 6.1 and 6.12 kernels date "cpuidle:
/// menu: Avoid discarding useful information" (mainline 6.15), and the first that reverted it.
const LARGEST_WHEN_UNSURE_FIRST_STABLE: [KernelVersion; 2] = [KernelVersion(6, 1, 141), KernelVersion(6, 12, 31)];
const LARGEST_WHEN_UNSURE_REVERTED_FIRST_STABLE: [KernelVersion; 2] =
    [KernelVersion(6, 1, 158), KernelVersion(6, 12, 56)];
/// The first 6.12 update with no exit-latency cap but PM QoS's: "cpuidle: menu: Remove iowait
/// influence" (6.13) and "cpuidle: governors: menu: Avoid selecting states with too much
/// latency" (6.17) came together.
const NO_EXIT_CAP_FIRST_STABLE: [KernelVersion; 1] = [KernelVersion(6, 12, 44)];
/// The first 6.12 update whose polling override needs the state's exit latency within the
/// prediction ("cpuidle: governors: menu: Select polling state in some more cases", 6.18).
const POLL_EXIT_WITHIN_PREDICTION_FIRST_STABLE: [KernelVersion; 1] = [KernelVersion(6, 12, 58)];
/// The first stable updates whose polling override needs a target residency under
/// RESIDENCY_THRESHOLD_NS ("cpuidle: menu: Use residency threshold in polling state override
/// decisions", merged after 6.18): 6.12.64 from Debian's changelog, 6.18.3 from its release
/// (the only 6.18 update to that point to change menu.c, by the patch's nine lines).
const POLL_RESIDENCY_THRESHOLD_FIRST_STABLE: [KernelVersion; 2] = [KernelVersion(6, 12, 64), KernelVersion(6, 18, 3)];

/// How `get_typical_interval` drops outliers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outliers {
    /// Below 6.15: the largest values (every copy), two passes for the variance.
    Largest,
    /// 6.15+: whichever end lies farther from the mean, one pass for the variance.
    FartherEnd,
}

/// What caps the exit latency of the state menu chooses (besides PM QoS, unset here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ExitCap {
    /// Up to 6.12: the prediction divided by the performance multiplier 1 + 10·nr_iowait (its
    /// load term, rq->load.weight before 5.0, is 0 at an idle entry).
    PredictionOverIowait,
    /// 6.13 – 6.16: the prediction itself ("cpuidle: menu: Remove iowait influence").
    Prediction,
    /// 6.17+: none ("cpuidle: governors: menu: Avoid selecting states with too much latency").
    None,
}

/// menu.c's rules at one kernel version: mainline's by release, with the later rules each
/// stable series took from the update that took them (the `*_FIRST_STABLE` lists; a series
/// whose updates are not listed keeps its release's rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rules {
    /// 4.17+: menu may keep the tick ("sched/cpuidle: Idle loop rework", menu_select's
    /// `stop_tick`); before, the idle loop stopped it before menu chose.
    keeps_tick: bool,
    /// 5.0+: no `first_idx`; the polling override sits inside the selection loop.
    poll_in_loop: bool,
    /// 6.6+: a typical interval within RESIDENCY_THRESHOLD_NS is used without reading the
    /// timer, and an all-zero history is no prediction (the `!max` check).
    short_typical_skips_timer: bool,
    outliers: Outliers,
    /// An unsure history with at least half its samples left gives the largest of them.
    largest_when_unsure: bool,
    exit_cap: ExitCap,
    /// The polling override needs the state's exit latency within the prediction.
    poll_exit_within_prediction: bool,
    /// The polling override needs a target residency under RESIDENCY_THRESHOLD_NS.
    poll_residency_under_threshold: bool,
}

impl Rules {
    fn for_kernel(k: KernelVersion) -> Rules {
        let from = |major, minor| k >= KernelVersion(major, minor, 0);
        let exit_cap = if from(6, 17) || k.has_backport(&NO_EXIT_CAP_FIRST_STABLE) {
            ExitCap::None
        } else if from(6, 13) {
            ExitCap::Prediction
        } else {
            ExitCap::PredictionOverIowait
        };
        Rules {
            keeps_tick: from(4, 17),
            poll_in_loop: from(5, 0),
            short_typical_skips_timer: from(6, 6),
            outliers: if from(6, 15) { Outliers::FartherEnd } else { Outliers::Largest },
            largest_when_unsure: (from(6, 15) && !from(6, 18))
                || (k.has_backport(&LARGEST_WHEN_UNSURE_FIRST_STABLE)
                    && !k.has_backport(&LARGEST_WHEN_UNSURE_REVERTED_FIRST_STABLE)),
            exit_cap,
            poll_exit_within_prediction: from(6, 18) || k.has_backport(&POLL_EXIT_WITHIN_PREDICTION_FIRST_STABLE),
            poll_residency_under_threshold: k.has_backport(&POLL_RESIDENCY_THRESHOLD_FIRST_STABLE),
        }
    }
}

/// One CPU's idle history: menu's `intervals` ring and the running average standing for the
/// correction factor.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct IdleHistory {
    /// Measured idle periods in µs (menu_update_intervals), zero until filled.
    intervals: [u32; INTERVALS],
    /// The slot the next period goes to (`interval_ptr`).
    ptr: usize,
    /// Running average of the measured periods (ns), none before the first.
    avg_ns: Option<u64>,
}

impl IdleHistory {
    /// A measured idle period (ns, after menu_update's corrections) joins the history.
    pub fn push(&mut self, measured_ns: u64) {
        self.avg_ns = Some(match self.avg_ns {
            None => measured_ns,
            Some(a) => a - a / 8 + measured_ns / 8,
        });
        // ktime_to_us, stored in an unsigned int.
        self.intervals[self.ptr] = (measured_ns / 1000).min(u32::MAX as u64) as u32;
        self.ptr = (self.ptr + 1) % INTERVALS;
    }

    /// The recent intervals (µs), newest first.
    pub fn intervals_newest_first(&self) -> [u32; INTERVALS] {
        std::array::from_fn(|i| self.intervals[(self.ptr + INTERVALS - 1 - i) % INTERVALS])
    }

    /// The running average (ns) standing for the correction factor, none before any period.
    pub fn avg_ns(&self) -> Option<u64> {
        self.avg_ns
    }

    /// get_typical_interval (µs) of `kernel`, none for UINT_MAX (no prediction).
    #[cfg(test)]
    fn typical_us(&self, kernel: KernelVersion) -> Option<u64> {
        self.typical(&Rules::for_kernel(kernel))
    }

    fn typical(&self, rules: &Rules) -> Option<u64> {
        match rules.outliers {
            Outliers::Largest => typical_dropping_largest(&self.intervals, rules),
            Outliers::FartherEnd => typical_dropping_farther_end(&self.intervals, rules),
        }
    }
}

/// get_typical_interval below 6.15: the mean of the samples when their standard deviation is
/// at most 20 µs or under a sixth of the mean (then with at least 3/4 of them), else again
/// without the largest value (all its copies), down to 3/4 of the samples. Integer math in µs
/// as the source has it: the mean truncated, the variance the truncated mean square of the
/// deviations from it. 6.6+ give no prediction when the samples left are all zero; the stable
/// updates that took "Avoid discarding useful information" give the largest sample left when
/// unsure with at least half of them left.
fn typical_dropping_largest(intervals: &[u32; INTERVALS], rules: &Rules) -> Option<u64> {
    let n = INTERVALS as u64;
    let mut thresh = i32::MAX as u64;
    loop {
        let (mut min, mut max, mut sum, mut divisor) = (u32::MAX as u64, 0u64, 0u64, 0u64);
        for &v in intervals {
            let v = v as u64;
            if v <= thresh {
                sum += v;
                divisor += 1;
                max = max.max(v);
                min = min.min(v);
            }
        }
        if rules.short_typical_skips_timer && max == 0 {
            return None;
        }
        let avg = sum / divisor;
        let mut variance = 0u64;
        for &v in intervals {
            let v = v as u64;
            if v <= thresh {
                let diff = v as i64 - avg as i64;
                variance = variance.wrapping_add((diff * diff) as u64);
            }
        }
        variance /= divisor;
        if variance <= u64::MAX / 36 && ((avg * avg > variance * 36 && divisor * 4 >= n * 3) || variance <= 400) {
            return Some(avg);
        }
        if divisor * 4 <= n * 3 {
            return (rules.largest_when_unsure && divisor >= n / 2).then_some(max);
        }
        thresh = max - 1;
    }
}

/// get_typical_interval from 6.15: the variance as the mean square less the squared mean, in
/// one pass; an unsure history drops the minimum or the maximum, whichever lies farther from
/// the mean (all its copies), and when down to 3/4 of the samples returns, 6.15 – 6.17
/// ("cpuidle: menu: Avoid discarding useful information"), the largest left if at least half
/// remain (6.18 reverted that: no prediction).
fn typical_dropping_farther_end(intervals: &[u32; INTERVALS], rules: &Rules) -> Option<u64> {
    let n = INTERVALS as u64;
    let (mut min_thresh, mut max_thresh) = (-1i64, u32::MAX as i64);
    loop {
        let (mut min, mut max, mut avg, mut variance, mut divisor) = (u32::MAX as u64, 0u64, 0u64, 0u64, 0u64);
        for &v in intervals {
            if (v as i64) <= min_thresh || (v as i64) >= max_thresh {
                continue;
            }
            let v = v as u64;
            divisor += 1;
            avg += v;
            variance = variance.wrapping_add(v.wrapping_mul(v));
            max = max.max(v);
            min = min.min(v);
        }
        if max == 0 {
            return None;
        }
        avg /= divisor;
        variance /= divisor;
        let avg_sq = avg * avg;
        variance -= avg_sq;
        if variance <= u64::MAX / 36 && ((avg_sq > variance * 36 && divisor * 4 >= n * 3) || variance <= 400) {
            return Some(avg);
        }
        if divisor * 4 <= n * 3 {
            return (rules.largest_when_unsure && divisor >= n / 2).then_some(max);
        }
        if avg - min > max - avg {
            min_thresh = min as i64;
        } else {
            max_thresh = max as i64;
        }
    }
}

/// One run of menu_select on a history: the state, whether the tick is kept, and the time to
/// the next timer menu saw (`data->next_timer_ns`; u64::MAX when none or not read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Selection {
    pub state: usize,
    pub keeps_tick: bool,
    pub next_timer_ns: u64,
}

/// What menu_select reads besides the history.
#[derive(Clone, Copy)]
struct SelectInputs<'a> {
    now: TimeNs,
    next_timer: Option<TimeNs>,
    nr_iowait: u32,
    rules: Rules,
    tick_ns: u64,
    states: &'a [IdleStateFile],
    timing: &'a [IdleTiming],
}

/// menu_select on `h` (see the module's header for what is followed and the one stand-in).
fn menu_select(h: &IdleHistory, x: &SelectInputs) -> Selection {
    let SelectInputs { now, next_timer, nr_iowait, rules, tick_ns, states, timing } = *x;
    let polling = |i: usize| states[i].power == IdlePower::Polling;
    let typical_ns = h.typical(&rules).map(|us| us * 1000);
    let to_timer = next_timer.map_or(u64::MAX, |t| t.saturating_sub(now));
    // tick_nohz_get_sleep_length's delta_next: the next event with the tick running.
    let to_tick = ((now / tick_ns + 1) * tick_ns - now).min(to_timer);
    // 6.6+: a typical interval within RESIDENCY_THRESHOLD_NS is trusted without the timer,
    // taken as far away, and the tick as half a tick away.
    let reads_timer = !rules.short_typical_skips_timer || typical_ns.is_none_or(|t| t > RESIDENCY_THRESHOLD_NS);
    let (next_timer_ns, delta_tick) = if reads_timer { (to_timer, to_tick) } else { (u64::MAX, tick_ns / 2) };
    // The timer-based estimate: the stand-in for next_timer_ns · correction factor.
    let timer_based = if reads_timer { to_timer.min(h.avg_ns.unwrap_or(u64::MAX)) } else { u64::MAX };
    let mut predicted = timer_based.min(typical_ns.unwrap_or(u64::MAX));
    let limit = match rules.exit_cap {
        ExitCap::PredictionOverIowait => predicted / (1 + 10 * nr_iowait as u64),
        ExitCap::Prediction => predicted,
        ExitCap::None => u64::MAX,
    };
    let n = timing.len();
    let mut idx;
    if !rules.poll_in_loop {
        // Before 5.0: start from the first physical state (first_idx) unless a timer is due
        // within max(20 µs, its target residency); then the deepest state that fits both.
        let first = usize::from(polling(0) && n > 1 && next_timer_ns > timing[1].target_residency_ns.max(20_000));
        idx = first;
        for (i, s) in timing.iter().enumerate().skip(first) {
            if s.target_residency_ns > predicted {
                break;
            }
            if s.exit_ns > limit {
                // 4.17+: a latency break retains the tick by that state's residency.
                if rules.keeps_tick {
                    predicted = timing[idx].target_residency_ns;
                }
                break;
            }
            idx = i;
        }
    } else {
        idx = 0;
        // From 6.17 (6.12.44 in the 6.12 series) the exit latency is compared first, with PM
        // QoS's limit alone (none here): the order then changes nothing.
        for (i, s) in timing.iter().enumerate() {
            if s.target_residency_ns > predicted {
                // A physical state rather than a poll when no timer is due before its
                // residency, its exit within the cap (or within the prediction, 6.18+), and,
                // in later stable updates, its residency under RESIDENCY_THRESHOLD_NS.
                let exit_cap = if rules.poll_exit_within_prediction { predicted } else { limit };
                if polling(idx)
                    && s.exit_ns <= exit_cap
                    && s.target_residency_ns <= next_timer_ns
                    && (!rules.poll_residency_under_threshold || s.target_residency_ns < RESIDENCY_THRESHOLD_NS)
                {
                    predicted = s.target_residency_ns;
                    idx = i;
                    break;
                }
                if predicted >= tick_ns {
                    // The tick is not stopped at an idle entry: a shallow state keeps it.
                    predicted = timing[idx].target_residency_ns;
                }
                break;
            }
            if s.exit_ns > limit {
                break;
            }
            idx = i;
        }
    }
    if !rules.keeps_tick {
        return Selection { state: idx, keeps_tick: false, next_timer_ns };
    }
    // A poll, or less than a tick expected: the tick stays, and the state is the deepest whose
    // residency ends before it (or the timer).
    let keeps_tick = polling(idx) || predicted < tick_ns;
    if keeps_tick && idx > 0 && timing[idx].target_residency_ns > delta_tick {
        while idx > 0 {
            idx -= 1;
            if timing[idx].target_residency_ns <= delta_tick {
                break;
            }
        }
    }
    Selection { state: idx, keeps_tick, next_timer_ns }
}

/// menu_update's measured idle period: the residency (which includes the exit) less the
/// declared exit latency, or half of it under twice that latency; no longer than the timer
/// seen at selection.
fn measured_ns(residency_ns: u64, exit_ns: u64, next_timer_ns: u64) -> u64 {
    let m = if residency_ns > 2 * exit_ns { residency_ns - exit_ns } else { residency_ns / 2 };
    m.min(next_timer_ns)
}

/// One CPU's menu state (`struct menu_device`).
#[derive(Clone, Copy, Debug)]
struct MenuCpu {
    history: IdleHistory,
    /// The time to the next timer menu saw at its last selection.
    next_timer_ns: u64,
}

/// menu on every CPU.
pub(crate) struct Menu {
    cpus: Vec<MenuCpu>,
    /// The rules of the kernel last asked for, kept because every idle entry asks (a run has
    /// one kernel).
    rules: Option<(KernelVersion, Rules)>,
}

impl Menu {
    pub fn new(ncpus: usize) -> Menu {
        Menu { cpus: vec![MenuCpu { history: IdleHistory::default(), next_timer_ns: u64::MAX }; ncpus], rules: None }
    }

    fn rules(&mut self, kernel: KernelVersion) -> Rules {
        match self.rules {
            Some((k, rules)) if k == kernel => rules,
            _ => self.rules.insert((kernel, Rules::for_kernel(kernel))).1,
        }
    }
}

impl IdleGovernor for Menu {
    fn select(&mut self, cpu: usize, inputs: &IdleInputs) -> IdleChoice {
        let IdleInputs { now, next_timer, nr_iowait, kernel, tick_ns, states, timing } = *inputs;
        let x = SelectInputs { now, next_timer, nr_iowait, rules: self.rules(kernel), tick_ns, states, timing };
        let c = &mut self.cpus[cpu];
        let first = menu_select(&c.history, &x);
        c.next_timer_ns = first.next_timer_ns;
        let reconsider_at = if first.keeps_tick { gives_up_at(&c.history, &x, first.next_timer_ns) } else { None };
        IdleChoice { state: first.state, reconsider_at }
    }

    fn reflect(&mut self, cpu: usize, residency_ns: u64, exit_ns: u64) {
        let c = &mut self.cpus[cpu];
        c.history.push(measured_ns(residency_ns, exit_ns, c.next_timer_ns));
    }

    fn history(&self, cpu: usize) -> Option<IdleHistory> {
        Some(self.cpus[cpu].history)
    }
}

/// For a CPU that went idle keeping the tick: the retained tick at which menu, woken by it
/// and choosing again, stops the tick (gives up on its short history), if one comes before the
/// next timer. Each tick wake-up records 45 ms (menu_update's tick_wakeup rule); when the
/// timer seen at a selection was within a tick (only possible at the first), that timer wakes
/// the CPU within the next tick and the replay ends. Like any measured period, the sample is
/// no longer than the timer seen.
fn gives_up_at(h: &IdleHistory, x: &SelectInputs, first_next_timer_ns: u64) -> Option<TimeNs> {
    let mut h = *h;
    let mut seen_timer_ns = first_next_timer_ns;
    let mut tick = (x.now / x.tick_ns + 1) * x.tick_ns;
    for _ in 0..INTERVALS {
        if x.next_timer.is_some_and(|t| t <= tick) || seen_timer_ns <= x.tick_ns {
            return None;
        }
        h.push(TICK_WAKEUP_SAMPLE_NS.min(seen_timer_ns));
        let again = menu_select(&h, &SelectInputs { now: tick, ..*x });
        if !again.keeps_tick {
            return Some(tick);
        }
        seen_timer_ns = again.next_timer_ns;
        tick += x.tick_ns;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::platform::{test_preset, Platform};

    /// Skylake's states (exit / target residency, µs): POLL 0/0, C1 2/2, C1E 10/20, C3 70/100,
    /// C6 85/200, C7s 124/800, C8 200/800.
    fn skylake() -> Platform {
        test_preset("skylake-e3-1240v5")
    }

    fn k(major: u32, minor: u32) -> KernelVersion {
        KernelVersion(major, minor, 0)
    }

    fn inputs(
        plat: &Platform,
        now: TimeNs,
        next_timer: Option<TimeNs>,
        nr_iowait: u32,
        kernel: KernelVersion,
    ) -> IdleInputs<'_> {
        IdleInputs {
            now,
            next_timer,
            nr_iowait,
            kernel,
            tick_ns: 4_000_000,
            states: &plat.cluster_of_cpu(0).idle_states,
            timing: plat.idle_timing_of_cpu(0),
        }
    }

    /// A menu whose CPU 0 measured `us` eight times (exit latency 0: no correction).
    fn menu_after(plat: &Platform, us: &[u64]) -> Menu {
        let mut menu = Menu::new(plat.ncpus());
        for &u in us {
            menu.reflect(0, u * 1000, 0);
        }
        menu
    }

    fn history(us: &[u64]) -> IdleHistory {
        let mut h = IdleHistory::default();
        for &u in us {
            h.push(u * 1000);
        }
        h
    }

    /// The first idle entry knows nothing and sleeps deepest; a history of 150 µs periods fits
    /// C3; an iowaiter divides the exit-latency cap by 11 before 6.13.
    #[test]
    fn menu_selects_by_prediction_residency_and_the_iowait_cap() {
        let plat = skylake();
        let mut menu = Menu::new(plat.ncpus());
        assert_eq!(menu.select(0, &inputs(&plat, 0, None, 0, k(6, 12))), IdleChoice { state: 6, reconsider_at: None });
        let mut menu2 = menu_after(&plat, &[150; 8]);
        assert_eq!(menu2.select(0, &inputs(&plat, 0, None, 0, k(6, 12))).state, 3);
        assert_eq!(menu2.select(0, &inputs(&plat, 0, None, 1, k(6, 12))).state, 2);
        assert_eq!(menu2.select(0, &inputs(&plat, 0, None, 1, k(6, 13))).state, 3);
        // A timer due sooner than the typical interval shortens the prediction.
        assert_eq!(menu2.select(0, &inputs(&plat, 0, Some(50_000), 0, k(6, 12))).state, 2);
        // Another CPU's history is its own.
        assert_eq!(menu2.select(1, &inputs(&plat, 0, None, 0, k(6, 12))).state, 6);
        let _ = &mut menu;
    }

    /// menu_update takes the declared exit latency off the measured residency, or halves a
    /// residency under twice that latency, and caps it at the timer menu saw.
    #[test]
    fn the_measured_period_loses_the_exit_latency() {
        assert_eq!(measured_ns(300_000, 100_000, u64::MAX), 200_000);
        assert_eq!(measured_ns(150_000, 100_000, u64::MAX), 75_000);
        assert_eq!(measured_ns(300_000, 100_000, 120_000), 120_000);
        let plat = skylake();
        let mut menu = Menu::new(plat.ncpus());
        // Eight 150 µs residencies out of C3 (70 µs exit) are 80 µs idle: C1E, not C3.
        for _ in 0..8 {
            menu.reflect(0, 150_000, 70_000);
        }
        assert_eq!(menu.cpus[0].history.intervals, [80; 8]);
        assert_eq!(menu.select(0, &inputs(&plat, 0, Some(10_000_000), 0, k(6, 1))).state, 2);
    }

    /// A prediction under C1's residency polls on 5.0+ (C1 exits no sooner than its residency);
    /// before 5.0 only a timer due within 20 µs keeps the CPU polling.
    #[test]
    fn menu_polls_on_a_very_short_prediction_as_the_kernel_version_has_it() {
        let plat = skylake();
        let mut menu = menu_after(&plat, &[1; 8]);
        assert_eq!(menu.select(0, &inputs(&plat, 0, None, 0, k(5, 10))).state, 0);
        assert_eq!(menu.select(0, &inputs(&plat, 0, None, 0, k(4, 19))).state, 1);
        assert_eq!(menu.select(0, &inputs(&plat, 0, Some(10_000), 0, k(4, 19))).state, 0);
    }

    /// A shallow choice on a short history is reconsidered at the retained tick where menu
    /// gives up on it: eight 40 µs periods, then 45 ms per tick wake-up. Below 6.15 all copies
    /// of the largest value go at once and the 40 µs left agree (a variance of 0), up to the
    /// eighth tick, when only 45 ms samples are left: the tick is stopped then (32 ms). 6.15+
    /// drop the end farther from the mean: the 45 ms samples until they are five of eight.
    #[test]
    fn menu_reconsiders_a_short_prediction_at_a_retained_tick() {
        let plat = skylake();
        let mut menu = menu_after(&plat, &[40; 8]);
        let choice = menu.select(0, &inputs(&plat, 1_000_000, None, 0, k(6, 12)));
        assert_eq!(choice, IdleChoice { state: 2, reconsider_at: Some(32_000_000) });
        // With a timer due, each tick's sample is capped at the time to it (30, 27, 23 ms):
        // they differ, go one at a time, and the third tick leaves no agreement.
        let choice = menu.select(0, &inputs(&plat, 1_000_000, Some(31_000_000), 0, k(6, 12)));
        assert_eq!(choice, IdleChoice { state: 2, reconsider_at: Some(12_000_000) });
        // A timer due before that tick ends the idle period first.
        let choice = menu.select(0, &inputs(&plat, 1_000_000, Some(11_000_000), 0, k(6, 12)));
        assert_eq!(choice, IdleChoice { state: 2, reconsider_at: None });
        assert_eq!(menu.select(0, &inputs(&plat, 1_000_000, None, 0, k(6, 15))).reconsider_at, Some(20_000_000));
    }

    /// Before 4.17 the idle loop stopped the tick before menu chose: a short prediction is
    /// never reconsidered at a tick.
    #[test]
    fn no_retained_tick_before_4_17() {
        let plat = skylake();
        let mut menu = menu_after(&plat, &[40; 8]);
        let choice = menu.select(0, &inputs(&plat, 1_000_000, None, 0, k(4, 16)));
        assert_eq!(choice, IdleChoice { state: 2, reconsider_at: None });
        assert_eq!(menu.select(0, &inputs(&plat, 1_000_000, None, 0, k(4, 17))).reconsider_at, Some(32_000_000));
    }

    /// 4.17+: with the tick kept (less than a tick expected), no state whose target residency
    /// ends after the next tick: 600 µs expected but the tick due in 150 µs gives C3 (100 µs),
    /// not C6 (200 µs).
    #[test]
    fn a_kept_tick_bounds_the_state_from_4_17() {
        let plat = skylake();
        let mut menu = menu_after(&plat, &[600; 8]);
        let now = 4_000_000 - 150_000;
        assert_eq!(menu.select(0, &inputs(&plat, now, None, 0, k(4, 16))).state, 4);
        assert_eq!(menu.select(0, &inputs(&plat, now, None, 0, k(4, 17))).state, 3);
        assert_eq!(menu.select(0, &inputs(&plat, 1_000_000, None, 0, k(4, 17))).state, 4);
    }

    /// menu on a made-up table: Skylake's first `timing.len()` states with other latencies.
    fn select_with(menu: &mut Menu, plat: &Platform, timing: &[IdleTiming], kernel: KernelVersion) -> usize {
        let states = &plat.cluster_of_cpu(0).idle_states[..timing.len()];
        let inputs = IdleInputs { now: 0, next_timer: None, nr_iowait: 0, kernel, tick_ns: 4_000_000, states, timing };
        menu.select(0, &inputs).state
    }

    fn timing(us: &[(u64, u64)]) -> Vec<IdleTiming> {
        us.iter()
            .map(|&(exit, target)| IdleTiming { exit_ns: exit * 1000, target_residency_ns: target * 1000 })
            .collect()
    }

    /// 6.13 – 6.16 cap a state's exit latency at the prediction; 6.17 does not: a state
    /// exiting in 50 µs with a 30 µs residency is taken on a 40 µs prediction only from 6.17.
    #[test]
    fn the_exit_cap_goes_in_6_17() {
        let plat = skylake();
        let table = timing(&[(0, 0), (2, 2), (50, 30)]);
        let mut menu = menu_after(&plat, &[40; 8]);
        assert_eq!(select_with(&mut menu, &plat, &table, k(6, 12)), 1);
        assert_eq!(select_with(&mut menu, &plat, &table, k(6, 16)), 1);
        assert_eq!(select_with(&mut menu, &plat, &table, k(6, 17)), 2);
    }

    /// 6.17 leaves a poll for a physical state whatever its exit latency; 6.18 only when that
    /// exit fits in the prediction: a 10 µs prediction with a state exiting in 12 µs (16 µs
    /// periods skip the timer from 6.6, which does not matter here).
    #[test]
    fn the_poll_override_exit_cap_is_gone_in_6_17_and_back_at_the_prediction_in_6_18() {
        let plat = skylake();
        let table = timing(&[(0, 0), (12, 11)]);
        let mut menu = menu_after(&plat, &[10; 8]);
        assert_eq!(select_with(&mut menu, &plat, &table, k(6, 16)), 0);
        assert_eq!(select_with(&mut menu, &plat, &table, k(6, 17)), 1);
        assert_eq!(select_with(&mut menu, &plat, &table, k(6, 18)), 0);
    }

    /// From 5.0 a poll is left for the first physical state when it fits the timer; from
    /// 6.12.64 and 6.18.3 (merged after 6.18) only when that state's target residency is
    /// under 15 µs.
    #[test]
    fn later_stable_updates_leave_a_poll_only_for_a_short_residency() {
        let plat = skylake();
        let table = timing(&[(0, 0), (2, 16)]);
        let mut menu = menu_after(&plat, &[10; 8]);
        for (kernel, state) in [
            (k(6, 17), 1),
            (k(6, 18), 1),
            (KernelVersion(6, 18, 2), 1),
            (KernelVersion(6, 18, 3), 0),
            (KernelVersion(6, 18, 44), 0),
            (KernelVersion(6, 12, 63), 1),
            (KernelVersion(6, 12, 64), 0),
        ] {
            assert_eq!(select_with(&mut menu, &plat, &table, kernel), state, "{kernel}");
        }
        let short = timing(&[(0, 0), (2, 14)]);
        assert_eq!(select_with(&mut menu, &plat, &short, KernelVersion(6, 18, 3)), 1);
    }

    /// The 6.12 series took 6.17's removal of the exit cap in 6.12.44 and 6.18's exit check of
    /// the polling override in 6.12.58; the 6.1 series took neither.
    #[test]
    fn the_6_12_series_takes_the_later_exit_rules_from_their_updates() {
        let plat = skylake();
        let no_cap = timing(&[(0, 0), (2, 2), (50, 30)]);
        let mut menu = menu_after(&plat, &[40; 8]);
        assert_eq!(select_with(&mut menu, &plat, &no_cap, KernelVersion(6, 12, 43)), 1);
        assert_eq!(select_with(&mut menu, &plat, &no_cap, KernelVersion(6, 12, 44)), 2);
        assert_eq!(select_with(&mut menu, &plat, &no_cap, KernelVersion(6, 1, 192)), 1);
        // An iowaiter no longer divides the cap: C3 on 150 µs periods, as 6.17 has it.
        let mut menu = menu_after(&plat, &[150; 8]);
        assert_eq!(menu.select(0, &inputs(&plat, 0, None, 1, KernelVersion(6, 12, 43))).state, 2);
        assert_eq!(menu.select(0, &inputs(&plat, 0, None, 1, KernelVersion(6, 12, 44))).state, 3);
        let poll_exit = timing(&[(0, 0), (12, 11)]);
        let mut menu = menu_after(&plat, &[10; 8]);
        assert_eq!(select_with(&mut menu, &plat, &poll_exit, KernelVersion(6, 12, 57)), 1);
        assert_eq!(select_with(&mut menu, &plat, &poll_exit, KernelVersion(6, 12, 58)), 0);
    }

    /// Which rules each version has: mainline's by release, the stable series' by update.
    #[test]
    fn rules_follow_the_release_and_the_stable_update() {
        let rules = |major, minor, stable| Rules::for_kernel(KernelVersion(major, minor, stable));
        let v6_12 = rules(6, 12, 0);
        assert_eq!(
            (v6_12.outliers, v6_12.largest_when_unsure, v6_12.exit_cap),
            (Outliers::Largest, false, ExitCap::PredictionOverIowait)
        );
        // Debian's 6.12.118: the 6.12 typical interval (the largest-when-unsure rule taken in
        // 6.12.31 and reverted in 6.12.56) with every later selection rule.
        assert_eq!(
            rules(6, 12, 118),
            Rules {
                exit_cap: ExitCap::None,
                poll_exit_within_prediction: true,
                poll_residency_under_threshold: true,
                ..v6_12
            }
        );
        assert!(rules(6, 12, 31).largest_when_unsure && rules(6, 12, 55).largest_when_unsure);
        assert!(!rules(6, 12, 30).largest_when_unsure && !rules(6, 12, 56).largest_when_unsure);
        assert!(rules(6, 1, 141).largest_when_unsure && !rules(6, 1, 158).largest_when_unsure);
        // Debian's 6.1.192 decides as 6.1.0.
        assert_eq!(rules(6, 1, 192), rules(6, 1, 0));
        // Mainline 6.18 has the exit check; the residency threshold only its stable updates.
        assert!(rules(6, 18, 0).poll_exit_within_prediction && !rules(6, 18, 0).poll_residency_under_threshold);
        assert!(!rules(6, 17, 0).poll_exit_within_prediction);
    }

    /// "Avoid discarding useful information" in the 6.1 and 6.12 updates that carried it:
    /// the largest-first form, giving the largest sample left when unsure with at least half
    /// of them (a spread history: 2,000 µs once the two largest are dropped).
    #[test]
    fn stable_updates_with_the_largest_when_unsure_rule_predict_from_a_spread_history() {
        let spread = history(&[10, 100, 1_000, 10_000, 20, 200, 2_000, 20_000]);
        assert_eq!(spread.typical_us(KernelVersion(6, 12, 30)), None);
        assert_eq!(spread.typical_us(KernelVersion(6, 12, 31)), Some(2_000));
        assert_eq!(spread.typical_us(KernelVersion(6, 12, 56)), None);
        assert_eq!(spread.typical_us(KernelVersion(6, 1, 141)), Some(2_000));
        assert_eq!(spread.typical_us(KernelVersion(6, 1, 158)), None);
        // The largest-first form keeps the 1 µs outlier where 6.15's drops it.
        let low = history(&[1, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000]);
        assert_eq!(low.typical_us(KernelVersion(6, 12, 31)), Some(1));
    }

    /// Below 6.15: the mean when the samples agree, else without the largest value (every copy
    /// of it), down to 3/4 of the samples.
    #[test]
    fn typical_interval_before_6_15_drops_the_largest_values() {
        let v = k(6, 1);
        assert_eq!(history(&[50, 50, 50, 50, 50, 50, 50, 30_000]).typical_us(v), Some(50));
        // Two copies of the largest go together: 6 left, which still may agree.
        assert_eq!(history(&[100, 100, 100, 100, 100, 100, 5_000, 5_000]).typical_us(v), Some(100));
        // Three go together: 5 left, only a variance within 400 µs² counts.
        assert_eq!(history(&[100, 100, 100, 100, 110, 5_000, 5_000, 5_000]).typical_us(v), Some(102));
        assert_eq!(history(&[100, 100, 100, 100, 200, 5_000, 5_000, 5_000]).typical_us(v), None);
        // A spread history gives none.
        assert_eq!(history(&[10, 100, 1_000, 10_000, 20, 200, 2_000, 20_000]).typical_us(v), None);
    }

    /// An all-zero history (idle periods under 1 µs, or none yet) predicts 0 µs until 6.5; from
    /// 6.6 it is no prediction (the `!max` check), so the timer decides.
    #[test]
    fn an_all_zero_history_is_no_prediction_from_6_6() {
        let h = IdleHistory::default();
        assert_eq!(h.typical_us(k(6, 5)), Some(0));
        assert_eq!(h.typical_us(k(6, 6)), None);
        assert_eq!(history(&[0, 0, 0, 0, 0, 0, 0, 500]).typical_us(k(6, 5)), Some(0));
        assert_eq!(history(&[0, 0, 0, 0, 0, 0, 0, 500]).typical_us(k(6, 6)), None);
    }

    /// 6.15+: outliers are dropped at either end, and an unsure history with at least half its
    /// samples left gives their largest until 6.17, nothing in 6.18.
    #[test]
    fn typical_interval_from_6_15_drops_either_end() {
        // A short outlier: below 6.15 every copy of the top value goes, leaving the 1 µs;
        // 6.15 drops the 1 µs instead.
        let low = history(&[1, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000]);
        assert_eq!(low.typical_us(k(6, 14)), Some(1));
        assert_eq!(low.typical_us(k(6, 15)), Some(1_000));
        let spread = history(&[10, 100, 1_000, 10_000, 20, 200, 2_000, 20_000]);
        assert_eq!(spread.typical_us(k(6, 15)), Some(2_000));
        assert_eq!(spread.typical_us(k(6, 17)), Some(2_000));
        assert_eq!(spread.typical_us(k(6, 18)), None);
    }

    /// The replay of retained ticks, as menu lives it: select, record 45 ms at the tick, select
    /// again, until the tick is stopped.
    #[test]
    fn giving_up_agrees_with_select_again_at_each_tick() {
        use rand::{Rng, SeedableRng};
        let plat = skylake();
        let mut rng = rand_pcg::Pcg64::seed_from_u64(11);
        let mut gave_up = 0;
        for _ in 0..5_000 {
            let kernel = [k(4, 19), k(5, 10), k(6, 6), k(6, 15), k(6, 18)][rng.gen_range(0..5)];
            let mut h = IdleHistory::default();
            for _ in 0..rng.gen_range(0..12) {
                h.push(rng.gen_range(0..3_000_000));
            }
            let now = rng.gen_range(0..1_000_000_000);
            let timer = rng.gen_bool(0.5).then(|| now + rng.gen_range(0..80_000_000));
            let x = SelectInputs {
                now,
                next_timer: timer,
                nr_iowait: 0,
                rules: Rules::for_kernel(kernel),
                tick_ns: 4_000_000,
                states: &plat.cluster_of_cpu(0).idle_states,
                timing: plat.idle_timing_of_cpu(0),
            };
            let first = menu_select(&h, &x);
            if !first.keeps_tick {
                continue;
            }
            // By hand: tick after tick.
            let (mut hh, mut tick, mut seen, mut expected) =
                (h, (now / 4_000_000 + 1) * 4_000_000, first.next_timer_ns, None);
            for _ in 0..INTERVALS {
                if timer.is_some_and(|t| t <= tick) || seen <= 4_000_000 {
                    break;
                }
                hh.push(45_000_000.min(seen));
                let again = menu_select(&hh, &SelectInputs { now: tick, ..x });
                if !again.keeps_tick {
                    expected = Some(tick);
                    break;
                }
                seen = again.next_timer_ns;
                tick += 4_000_000;
            }
            assert_eq!(gives_up_at(&h, &x, first.next_timer_ns), expected);
            gave_up += expected.is_some() as u32;
        }
        assert!(gave_up > 500, "{gave_up}");
    }
}
