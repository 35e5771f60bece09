//! The menu cpuidle governor (`drivers/cpuidle/governors/menu.c`): it predicts the idle
//! duration as the sooner of the next known timer and the "typical interval" of the last eight
//! idle periods, then takes the deepest state whose target residency fits the prediction and
//! whose exit latency fits its cap.
//!
//! When the prediction is shorter than a tick, the idle loop keeps the tick running (4.17+;
//! before, it stopped the tick before menu chose), menu takes no state deeper than the next
//! tick, and a mispredicted long idle period is cut by it: each tick wake-up makes menu record
//! a long interval (9/10 of its 50 ms horizon) and choose again. After a few of them the
//! typical interval gives up on the short history, and the CPU goes to the state its next
//! timer allows.
//!
//! What this model leaves out of menu.c (read at 4.7 – 6.18): the per-bucket correction
//! factor that scales the timer-based prediction (the running average stands for it), the
//! exit latency menu subtracts from a measured residency (and the halving of one under twice
//! that latency), the typical interval's later forms (5.0 – 6.5 give none when even the
//! shortest sample is longer than the timer-based prediction; 6.15+ drop outliers at either
//! end and, from an uncertain history, 6.15 – 6.17 return the largest sample left and 6.18
//! none, which means the deepest state), and the poll time limit (4.17+: a poll is cut after
//! TICK/16, from 5.0 after the first physical state's target residency, and menu chooses
//! again). docs/model.md says why.

use super::{deepest_within, IdleChoice, IdleGovernor, IdleInputs};
use crate::engine::TimeNs;
use crate::hw::platform::IdlePower;
use crate::kernel::KernelVersion;

/// Idle periods remembered (menu's INTERVALS).
const INTERVALS: usize = 8;
/// What menu records for an idle period a retained tick cut short: 9/10 of MAX_INTERESTING.
const TICK_WAKEUP_SAMPLE_NS: u64 = 45_000_000;
/// From 6.6 a typical interval this short skips the timer (RESIDENCY_THRESHOLD_NS, gov.h); in
/// 6.18 it also bounds the physical state that replaces a poll.
const RESIDENCY_THRESHOLD_NS: u64 = 15_000;
/// The first kernel whose idle loop lets menu keep the tick ("sched/cpuidle: Idle loop
/// rework", with menu_select's `stop_tick`); before, the tick was stopped before menu chose.
const TICK_KEPT_KERNEL: KernelVersion = KernelVersion(4, 17);

/// The last idle periods of one CPU, newest first, and their running average.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct IdleHistory {
    samples: [u64; INTERVALS],
    len: usize,
    avg_ns: u64,
    /// The sum and the sum of squares of `samples` (a short history's zeros included), kept
    /// as samples come and go rather than summed again at every idle entry.
    sum: u128,
    squares: u128,
}

impl IdleHistory {
    pub fn push(&mut self, ns: u64) {
        // Running average with weight 1/8, as menu's correction factors decay.
        self.avg_ns = if self.len == 0 { ns } else { self.avg_ns - self.avg_ns / 8 + ns / 8 };
        let (oldest, new) = (self.samples[INTERVALS - 1] as u128, ns as u128);
        self.sum = self.sum - oldest + new;
        self.squares = self.squares - oldest * oldest + new * new;
        self.samples.rotate_right(1);
        self.samples[0] = ns;
        self.len = (self.len + 1).min(INTERVALS);
    }

    /// The typical interval: the mean of the recent idle durations when they agree (small
    /// spread), dropping the largest outlier up to twice; otherwise the running average;
    /// unknown (u64::MAX) before any idle period.
    ///
    /// "Agree" is menu's test: a standard deviation of at most 20 µs, or one below a sixth of
    /// the mean. With the kept samples' count n, sum S and sum of squares Q, the variance is
    /// (n·Q − S²)/n², so both tests are exact in integers: n·Q − S² ≤ (20 µs)²·n², and
    /// S² > 36·(n·Q − S²). Sums are updated as outliers drop, with no sort: this runs at every
    /// idle entry.
    pub fn typical_ns(&self) -> u64 {
        if self.len == 0 {
            return u64::MAX;
        }
        if self.len < INTERVALS {
            return self.avg_ns;
        }
        let mut sums = Sums { sum: self.sum, squares: self.squares, ..Sums::default() };
        for &s in &self.samples {
            sums.rank(s);
        }
        sums.typical(self.avg_ns)
    }

    /// The predicted idle duration from `now`, given the next known timer (absolute).
    pub fn predict_ns(&self, now: TimeNs, next_timer: Option<TimeNs>) -> u64 {
        next_timer.map_or(u64::MAX, |t| t.saturating_sub(now)).min(self.typical_ns())
    }

    /// For a CPU going idle now on the prediction `predicted` (`predict_ns`): when it is
    /// shorter than `tick_ns`, the tick wake-up at which menu stops trusting the short history,
    /// if one comes before the next timer. From then on the CPU can sleep as deep as its next
    /// timer allows. Ticks fire on multiples of `tick_ns`.
    ///
    /// The replay needs no copy of the history: after k tick wake-ups it holds k long samples
    /// and the newest 8 − k of its own, whose sums are the history's less its k oldest, and
    /// whose two largest are prefix maxima taken once.
    pub fn gives_up_at(&self, now: TimeNs, predicted: u64, next_timer: Option<TimeNs>, tick_ns: u64) -> Option<TimeNs> {
        if predicted >= tick_ns {
            return None;
        }
        // largest[j]: the two largest of the newest j samples.
        // (Ranked in a local, each prefix only written out: reading back an entry just written
        // stalls on the store.)
        let mut largest = [(0, 0); INTERVALS + 1];
        let mut ranked = Sums::default();
        for (j, &s) in self.samples.iter().enumerate() {
            ranked.rank(s);
            largest[j + 1] = (ranked.largest, ranked.second);
        }
        let mut kept = Sums { sum: self.sum, squares: self.squares, ..Sums::default() };
        let (mut avg_ns, mut len) = (self.avg_ns, self.len);
        let mut tick = (now / tick_ns + 1) * tick_ns;
        for k in 1..=INTERVALS {
            if next_timer.is_some_and(|t| t <= tick) {
                return None;
            }
            // `push(TICK_WAKEUP_SAMPLE_NS)`, then `predict_ns(tick, next_timer)`.
            avg_ns = if len == 0 { TICK_WAKEUP_SAMPLE_NS } else { avg_ns - avg_ns / 8 + TICK_WAKEUP_SAMPLE_NS / 8 };
            len = (len + 1).min(INTERVALS);
            // The oldest sample left is pushed out by the k-th tick's.
            let oldest = self.samples[INTERVALS - k] as u128;
            kept.sum -= oldest;
            kept.squares -= oldest * oldest;
            let typical = if len < INTERVALS {
                avg_ns
            } else {
                let (largest, second) = largest[INTERVALS - k];
                let mut sums = Sums { largest, second, ..kept };
                sums.add(TICK_WAKEUP_SAMPLE_NS, k as u128);
                sums.typical(avg_ns)
            };
            if next_timer.map_or(u64::MAX, |t| t.saturating_sub(tick)).min(typical) >= tick_ns {
                return Some(tick);
            }
            tick += tick_ns;
        }
        None
    }
}

/// menu on every CPU: each CPU's idle history (`struct menu_device`).
pub(crate) struct Menu {
    history: Vec<IdleHistory>,
}

impl Menu {
    pub fn new(ncpus: usize) -> Menu {
        Menu { history: vec![IdleHistory::default(); ncpus] }
    }
}

impl IdleGovernor for Menu {
    /// menu_select, as modelled: predict the idle duration as the sooner of the next known
    /// timer and the typical recent idle interval (or, when recent intervals disagree, their
    /// running average: menu's correction factor learns the same), then take the deepest state
    /// whose target residency fits in it and whose exit latency fits menu's cap; on a preset
    /// with a polling state, polling when the first physical state's do not.
    fn select(&mut self, cpu: usize, inputs: &IdleInputs) -> IdleChoice {
        let IdleInputs { now, next_timer, states, timing, kernel, tick_ns, .. } = *inputs;
        let history = &self.history[cpu];
        let typical = history.typical_ns();
        let predicted = history.predict_ns(now, next_timer);
        // 6.6+: a typical interval of RESIDENCY_THRESHOLD_NS or less is trusted without reading
        // the timer (menu_select then takes the next timer as unknown and the tick as half a
        // tick away).
        let skip_timer = kernel >= KernelVersion(6, 6) && typical <= RESIDENCY_THRESHOLD_NS;
        let until_timer = match next_timer {
            Some(t) if !skip_timer => t.saturating_sub(now),
            _ => u64::MAX,
        };
        let mut state = deepest_within(timing, predicted);
        // menu caps a state's exit latency at the predicted idle time, divided up to 6.12 by its
        // performance multiplier 1 + 10·n (n tasks asleep in iowait here; its load term is
        // rq->load.weight, 0 at an idle entry); 6.13 – 6.16 cap it at the prediction itself
        // ("cpuidle: menu: Remove iowait influence"), 6.17 not at all ("cpuidle: governors: menu:
        // Avoid selecting states with too much latency").
        let limit_ns = if kernel >= KernelVersion(6, 17) {
            u64::MAX
        } else if kernel >= KernelVersion(6, 13) {
            predicted
        } else {
            predicted / (1 + 10 * inputs.nr_iowait as u64)
        };
        while state > 0 && timing[state].exit_ns > limit_ns {
            state -= 1;
        }
        // A prediction shorter than the first physical state's target residency leaves the
        // polling state. Since 5.0 menu leaves it for that state anyway when the state's exit
        // latency fits the cap above (on Intel's tables, where C1 exits in its target residency,
        // a CPU then polls exactly when it expects to sleep less than that; 6.17 has no cap, 6.18
        // the prediction) and no timer is due before its target residency (6.18: a residency
        // also under RESIDENCY_THRESHOLD_NS); before, only a timer due within max(20 µs, that
        // residency) kept the CPU polling.
        if states[state].power == IdlePower::Polling && state + 1 < states.len() {
            let physical_state = timing[state + 1];
            let target_ns = physical_state.target_residency_ns;
            let physical = if kernel >= KernelVersion(5, 0) {
                // 6.17 dropped the cap here with the rest ("cpuidle: governors: menu: Avoid
                // selecting states with too much latency"); 6.18 brought back a cap at the
                // prediction for this case alone ("cpuidle: governors: menu: Select polling
                // state in some more cases").
                let exit_limit = if kernel >= KernelVersion(6, 18) { predicted } else { limit_ns };
                physical_state.exit_ns <= exit_limit
                    && target_ns <= until_timer
                    && (kernel < KernelVersion(6, 18) || target_ns < RESIDENCY_THRESHOLD_NS)
            } else {
                until_timer > target_ns.max(20_000)
            };
            if physical {
                state += 1;
            }
        }
        if kernel < TICK_KEPT_KERNEL {
            // The idle loop stopped the tick before menu chose: the CPU sleeps in its state
            // until something wakes it.
            return IdleChoice { state, reconsider_at: None };
        }
        // 4.17+: when the tick stays (a poll, or less than a tick expected), no state deeper than
        // the time to the next tick (menu_select's delta_tick).
        let polling = states[state].power == IdlePower::Polling;
        let expected = if predicted < tick_ns || state + 1 >= timing.len() {
            predicted
        } else {
            timing[state].target_residency_ns
        };
        if polling || expected < tick_ns {
            let next_tick = (now / tick_ns + 1) * tick_ns - now;
            let delta_tick = if skip_timer { tick_ns / 2 } else { next_tick.min(until_timer) };
            while state > 0 && timing[state].target_residency_ns > delta_tick {
                state -= 1;
            }
        }
        // A shallow state chosen on a short history is left at the retained tick that makes
        // menu give up on it.
        let reconsider_at = history.gives_up_at(now, predicted, next_timer, tick_ns);
        IdleChoice { state, reconsider_at }
    }

    /// menu_reflect / menu_update: the idle period joins the history.
    fn reflect(&mut self, cpu: usize, slept_ns: u64) {
        self.history[cpu].push(slept_ns);
    }
}

/// Count, sum, sum of squares and the two largest of a set of idle periods.
#[derive(Clone, Copy, Default)]
struct Sums {
    sum: u128,
    squares: u128,
    largest: u64,
    second: u64,
}

impl Sums {
    /// Add `times` copies of `s`.
    fn add(&mut self, s: u64, times: u128) {
        self.sum += times * s as u128;
        self.squares += times * (s as u128) * (s as u128);
        // Past two copies, more change neither of the two largest.
        for _ in 0..times.min(2) {
            self.rank(s);
        }
    }

    /// Count `s` (once more) among the two largest.
    fn rank(&mut self, s: u64) {
        if s > self.largest {
            self.second = self.largest;
            self.largest = s;
        } else if s > self.second {
            self.second = s;
        }
    }

    /// menu's typical interval of these INTERVALS samples (see [`IdleHistory::typical_ns`]),
    /// `avg_ns` when they never agree.
    fn typical(self, avg_ns: u64) -> u64 {
        // Samples below 2^26 ns (67 ms, a tick wake-up's 45 ms among them) keep every product
        // of the test below 2^64 (n·Q and S² ≤ 2^58, 36·(n·Q − S²) < 2^64): the same integers
        // in 64 bits, without 128-bit multiplications and divisions.
        let Sums { sum, squares, largest, second } = self;
        let mean = if largest < 1 << 26 {
            agreeing_mean(sum as u64, squares as u64, largest, second)
        } else {
            agreeing_mean(sum, squares, largest, second)
        };
        mean.unwrap_or(avg_ns)
    }
}

/// The mean of INTERVALS samples of sum `sum` and sum of squares `squares`, or of the
/// INTERVALS − 1 without `largest`, or of the INTERVALS − 2 without `second` too, the first
/// whose samples agree (see [`IdleHistory::typical_ns`]).
fn agreeing_mean<T>(mut sum: T, mut squares: T, largest: u64, second: u64) -> Option<u64>
where
    T: Copy
        + Ord
        + From<u64>
        + TryInto<u64>
        + std::ops::Sub<Output = T>
        + std::ops::Mul<Output = T>
        + std::ops::Div<Output = T>,
{
    let max_agreeing_variance_ns2 = T::from(20_000 * 20_000);
    let n = INTERVALS as u64;
    for (n, dropped) in [(n, None), (n - 1, Some(largest)), (n - 2, Some(second))] {
        let n = T::from(n);
        if let Some(d) = dropped {
            let d = T::from(d);
            sum = sum - d;
            squares = squares - d * d;
        }
        let spread = n * squares - sum * sum; // n² · variance, never negative
        if spread <= max_agreeing_variance_ns2 * n * n || sum * sum > T::from(36) * spread {
            return (sum / n).try_into().ok();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::platform::{test_preset, IdleTiming, Platform};

    /// Skylake's states (exit / target residency, µs): POLL 0/0, C1 2/2, C1E 10/20, C3 70/100,
    /// C6 85/200, C7s 124/800, C8 200/800.
    fn skylake() -> Platform {
        test_preset("skylake-e3-1240v5")
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

    /// menu built alone: the first idle entry knows nothing and sleeps deepest; a history of
    /// 150 µs periods fits C3; an iowaiter divides the exit-latency cap by 11 before 6.13.
    #[test]
    fn menu_selects_by_prediction_residency_and_the_iowait_cap() {
        let plat = skylake();
        let k = KernelVersion(6, 12);
        let mut menu = Menu::new(plat.ncpus());
        let first = menu.select(0, &inputs(&plat, 0, None, 0, k));
        assert_eq!(first, IdleChoice { state: 6, reconsider_at: None });
        for _ in 0..8 {
            menu.reflect(0, 150_000);
        }
        assert_eq!(menu.select(0, &inputs(&plat, 0, None, 0, k)).state, 3);
        assert_eq!(menu.select(0, &inputs(&plat, 0, None, 1, k)).state, 2);
        assert_eq!(menu.select(0, &inputs(&plat, 0, None, 1, KernelVersion(6, 13))).state, 3);
        // A timer due sooner than the typical interval shortens the prediction.
        assert_eq!(menu.select(0, &inputs(&plat, 0, Some(50_000), 0, k)).state, 2);
        // Another CPU's history is its own.
        assert_eq!(menu.select(1, &inputs(&plat, 0, None, 0, k)).state, 6);
    }

    /// A prediction under C1's residency polls on 5.0+ (C1 exits no sooner than its residency);
    /// before 5.0 only a timer due within 20 µs keeps the CPU polling.
    #[test]
    fn menu_polls_on_a_very_short_prediction_as_the_kernel_version_has_it() {
        let plat = skylake();
        let mut menu = Menu::new(plat.ncpus());
        for _ in 0..8 {
            menu.reflect(0, 1_000);
        }
        assert_eq!(menu.select(0, &inputs(&plat, 0, None, 0, KernelVersion(5, 10))).state, 0);
        assert_eq!(menu.select(0, &inputs(&plat, 0, None, 0, KernelVersion(4, 19))).state, 1);
        assert_eq!(menu.select(0, &inputs(&plat, 0, Some(10_000), 0, KernelVersion(4, 19))).state, 0);
    }

    /// A shallow choice on a short history is reconsidered at the retained tick where menu
    /// gives up on it (see `retained_ticks_make_menu_give_up_on_a_short_history`).
    #[test]
    fn menu_reconsiders_a_short_prediction_at_a_retained_tick() {
        let plat = skylake();
        let mut menu = Menu::new(plat.ncpus());
        for _ in 0..8 {
            menu.reflect(0, 40_000);
        }
        let choice = menu.select(0, &inputs(&plat, 1_000_000, None, 0, KernelVersion(6, 12)));
        assert_eq!(choice, IdleChoice { state: 2, reconsider_at: Some(12_000_000) });
    }

    /// Before 4.17 the idle loop stopped the tick before menu chose: a short prediction is
    /// never reconsidered at a tick.
    #[test]
    fn no_retained_tick_before_4_17() {
        let plat = skylake();
        let mut menu = Menu::new(plat.ncpus());
        for _ in 0..8 {
            menu.reflect(0, 40_000);
        }
        let mut at = |k| menu_select_at(&mut menu, &plat, 1_000_000, None, k);
        assert_eq!(at(KernelVersion(4, 16)), IdleChoice { state: 2, reconsider_at: None });
        assert_eq!(at(KernelVersion(4, 17)), IdleChoice { state: 2, reconsider_at: Some(12_000_000) });
    }

    fn menu_select_at(
        menu: &mut Menu,
        plat: &Platform,
        now: TimeNs,
        timer: Option<TimeNs>,
        k: KernelVersion,
    ) -> IdleChoice {
        menu.select(0, &inputs(plat, now, timer, 0, k))
    }

    /// 4.17+: with the tick kept (less than a tick expected), no state whose target residency
    /// ends after the next tick: 600 µs expected but the tick due in 150 µs gives C3 (100 µs),
    /// not C6 (200 µs).
    #[test]
    fn a_kept_tick_bounds_the_state_from_4_17() {
        let plat = skylake();
        let mut menu = Menu::new(plat.ncpus());
        for _ in 0..8 {
            menu.reflect(0, 600_000);
        }
        let now = 4_000_000 - 150_000;
        assert_eq!(menu_select_at(&mut menu, &plat, now, None, KernelVersion(4, 16)).state, 4);
        assert_eq!(menu_select_at(&mut menu, &plat, now, None, KernelVersion(4, 17)).state, 3);
        assert_eq!(menu_select_at(&mut menu, &plat, 1_000_000, None, KernelVersion(4, 17)).state, 4);
    }

    /// menu on a made-up table: Skylake's first `timing.len()` states with other latencies.
    fn select_with(menu: &mut Menu, plat: &Platform, timing: &[IdleTiming], k: KernelVersion) -> usize {
        let states = &plat.cluster_of_cpu(0).idle_states[..timing.len()];
        let inputs =
            IdleInputs { now: 0, next_timer: None, nr_iowait: 0, kernel: k, tick_ns: 4_000_000, states, timing };
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
        let mut menu = Menu::new(plat.ncpus());
        for _ in 0..8 {
            menu.reflect(0, 40_000);
        }
        assert_eq!(select_with(&mut menu, &plat, &table, KernelVersion(6, 12)), 1);
        assert_eq!(select_with(&mut menu, &plat, &table, KernelVersion(6, 16)), 1);
        assert_eq!(select_with(&mut menu, &plat, &table, KernelVersion(6, 17)), 2);
    }

    /// 6.17 leaves a poll for a physical state whatever its exit latency; 6.18 only when that
    /// exit fits in the prediction: a 10 µs prediction with a state exiting in 12 µs.
    #[test]
    fn the_poll_override_exit_cap_is_gone_in_6_17_and_back_at_the_prediction_in_6_18() {
        let plat = skylake();
        let table = timing(&[(0, 0), (12, 11)]);
        let mut menu = Menu::new(plat.ncpus());
        for _ in 0..8 {
            menu.reflect(0, 10_000);
        }
        assert_eq!(select_with(&mut menu, &plat, &table, KernelVersion(6, 16)), 0);
        assert_eq!(select_with(&mut menu, &plat, &table, KernelVersion(6, 17)), 1);
        assert_eq!(select_with(&mut menu, &plat, &table, KernelVersion(6, 18)), 0);
    }

    /// From 5.0 a poll is left for the first physical state when it fits the timer; 6.18 only
    /// when that state's target residency is under 15 µs.
    #[test]
    fn the_6_18_poll_override_needs_a_short_residency() {
        let plat = skylake();
        let table = timing(&[(0, 0), (2, 16)]);
        let mut menu = Menu::new(plat.ncpus());
        for _ in 0..8 {
            menu.reflect(0, 10_000);
        }
        assert_eq!(select_with(&mut menu, &plat, &table, KernelVersion(6, 17)), 1);
        assert_eq!(select_with(&mut menu, &plat, &table, KernelVersion(6, 18)), 0);
        let short = timing(&[(0, 0), (2, 14)]);
        assert_eq!(select_with(&mut menu, &plat, &short, KernelVersion(6, 18)), 1);
    }

    fn history(samples: &[u64]) -> IdleHistory {
        let mut h = IdleHistory::default();
        for &s in samples {
            h.push(s);
        }
        h
    }

    #[test]
    fn typical_interval_is_the_mean_of_agreeing_samples_without_outliers() {
        assert_eq!(IdleHistory::default().typical_ns(), u64::MAX);
        // Fewer than eight samples: the running average (first sample, then 7/8 + 1/8).
        assert_eq!(history(&[80_000, 160_000]).typical_ns(), 80_000 - 10_000 + 20_000);
        // Seven agreeing samples and one far outlier: the outlier is dropped.
        let h = history(&[50_000, 50_000, 50_000, 50_000, 50_000, 50_000, 50_000, 30_000_000]);
        assert_eq!(h.typical_ns(), 50_000);
    }

    /// menu's test as written: sort, then the mean and variance of the smallest n samples.
    fn typical_by_definition(h: &IdleHistory) -> u64 {
        let mut samples = h.samples;
        samples.sort_unstable();
        for n in (INTERVALS - 2..=INTERVALS).rev() {
            let kept = &samples[..n];
            let mean = kept.iter().map(|&s| s as f64).sum::<f64>() / n as f64;
            let var = kept.iter().map(|&s| (s as f64 - mean).powi(2)).sum::<f64>() / n as f64;
            if var <= 400e6 || mean * mean > 36.0 * var {
                return mean as u64;
            }
        }
        h.avg_ns
    }

    #[test]
    fn typical_interval_in_integers_agrees_with_the_definition() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        let mut agreeing = 0;
        for _ in 0..20_000 {
            // Histories around a common interval with a spread from none to wild, and now and
            // then a long outlier (a tick wake-up, a timer).
            let centre = rng.gen_range(1_000..20_000_000u64);
            let spread = centre as f64 * [0.0, 0.05, 0.2, 1.0][rng.gen_range(0..4)];
            // Up to as many again pushed before: the kept sums follow samples going out.
            let mut h = IdleHistory::default();
            for _ in 0..INTERVALS + rng.gen_range(0..INTERVALS) {
                let s = if rng.gen_bool(0.1) {
                    45_000_000
                } else {
                    (centre as f64 + spread * rng.gen_range(-1.0..1.0)).max(0.0) as u64
                };
                h.push(s);
            }
            let typical = h.typical_ns();
            assert_eq!(typical, typical_by_definition(&h), "{:?}", h.samples);
            agreeing += (typical != h.avg_ns) as u32;
        }
        // Both branches were taken many times.
        assert!((2_000..18_000).contains(&agreeing), "{agreeing}");
    }

    #[test]
    fn the_agreement_test_gives_the_same_in_64_and_128_bits_below_67_ms() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(5);
        let mut agreeing = 0;
        for _ in 0..20_000 {
            let centre = rng.gen_range(1_000..(1u64 << 26));
            let mut sums = Sums::default();
            for _ in 0..INTERVALS {
                sums.add(rng.gen_range(centre / 2..=centre).min((1 << 26) - 1), 1);
            }
            let wide = agreeing_mean(sums.sum, sums.squares, sums.largest, sums.second);
            assert_eq!(agreeing_mean(sums.sum as u64, sums.squares as u64, sums.largest, sums.second), wide);
            agreeing += wide.is_some() as u32;
        }
        assert!((2_000..18_000).contains(&agreeing), "{agreeing}");
    }

    #[test]
    fn prediction_is_the_sooner_of_timer_and_typical_interval() {
        let short = history(&[40_000; 8]);
        assert_eq!(short.predict_ns(0, None), 40_000);
        let long = history(&[10_000_000; 8]);
        assert_eq!(long.predict_ns(1_000, None), 10_000_000);
        assert_eq!(long.predict_ns(1_000, Some(2_001_000)), 2_000_000);
    }

    /// The replay as menu lives it: push a tick wake-up's sample, predict again.
    fn gives_up_by_replay(h: &IdleHistory, now: TimeNs, next_timer: Option<TimeNs>, tick_ns: u64) -> Option<TimeNs> {
        if h.predict_ns(now, next_timer) >= tick_ns {
            return None;
        }
        let mut history = *h;
        let mut tick = (now / tick_ns + 1) * tick_ns;
        for _ in 0..INTERVALS {
            if next_timer.is_some_and(|t| t <= tick) {
                return None;
            }
            history.push(TICK_WAKEUP_SAMPLE_NS);
            if history.predict_ns(tick, next_timer) >= tick_ns {
                return Some(tick);
            }
            tick += tick_ns;
        }
        None
    }

    #[test]
    fn giving_up_agrees_with_the_replay() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(11);
        let mut gave_up = 0;
        for _ in 0..20_000 {
            let tick_ns = [1_000_000, 4_000_000][rng.gen_range(0..2)];
            let mut h = IdleHistory::default();
            for _ in 0..rng.gen_range(0..12) {
                let s = match rng.gen_range(0..10) {
                    0 => TICK_WAKEUP_SAMPLE_NS,
                    1 => rng.gen_range(0..200_000_000),
                    _ => rng.gen_range(0..3 * tick_ns),
                };
                h.push(s);
            }
            let now = rng.gen_range(0..1_000_000_000);
            let timer = rng.gen_bool(0.5).then(|| now + rng.gen_range(0..20 * tick_ns));
            let expected = gives_up_by_replay(&h, now, timer, tick_ns);
            assert_eq!(h.gives_up_at(now, h.predict_ns(now, timer), timer, tick_ns), expected, "{h:?} {now} {timer:?}");
            gave_up += expected.is_some() as u32;
        }
        assert!(gave_up > 1_000, "{gave_up}");
    }

    #[test]
    fn retained_ticks_make_menu_give_up_on_a_short_history() {
        const TICK: u64 = 4_000_000;
        // Eight 40 µs periods: each tick wake-up records 45 ms; the first two are dropped as
        // outliers, the third leaves too many to drop and the running average,
        // 40 µs + (45 ms − 40 µs)·(1 − (7/8)³) ≈ 14.9 ms, exceeds the tick.
        let gives_up_at = |h: &IdleHistory, now, timer| h.gives_up_at(now, h.predict_ns(now, timer), timer, TICK);
        let h = history(&[40_000; 8]);
        assert_eq!(gives_up_at(&h, 1_000_000, None), Some(12_000_000));
        // A timer due before that third tick ends the idle period first.
        assert_eq!(gives_up_at(&h, 1_000_000, Some(11_000_000)), None);
        // A long prediction needs no tick wake-up.
        assert_eq!(gives_up_at(&history(&[10_000_000; 8]), 1_000, None), None);
    }
}
