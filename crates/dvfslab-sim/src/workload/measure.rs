//! What the benchmark models share to build programs for a platform and to turn what a run
//! recorded into the benchmark's own number.

use super::{Metric, RunStats, WorkloadInfo};
use crate::hw::platform::Platform;

/// The metric of `info` with this value.
pub fn metric(info: &WorkloadInfo, value: f64) -> Metric {
    Metric { name: info.metric.into(), value, unit: info.unit.into(), better: info.better }
}

/// How much counter `counter` counted per simulated second (0 for a run of no time): the rate
/// of a benchmark that reports completions over a fixed time.
pub fn per_second(stats: &RunStats, counter: u16) -> f64 {
    let secs = stats.sim_time_ns as f64 / 1e9;
    let done = stats.counters.get(counter as usize).copied().unwrap_or(0) as f64;
    if secs > 0.0 {
        done / secs
    } else {
        0.0
    }
}

/// Elapsed seconds of a fixed amount of work, as `time` reports it: the run ends when the last
/// task exits, so a finished run's length is the makespan. A run cut short by its duration
/// has done `counters[progress]` of `total` steps; its elapsed time is extrapolated from that
/// progress (a crude estimate, and a lower bound when nothing finished at all).
pub fn elapsed_s(stats: &RunStats, progress: usize, total: u64) -> f64 {
    let secs = stats.sim_time_ns as f64 * 1e-9;
    let done = stats.counters.get(progress).copied().unwrap_or(0);
    if done >= total {
        secs
    } else {
        secs * total as f64 / done.max(1) as f64
    }
}

/// Work per nanosecond (cycles, as `Op::Run` counts them) of `cpu` alone at its cluster's top
/// frequency: µarch capacity × f_max.
pub fn top_cycles_per_ns(plat: &Platform, cpu: usize) -> f64 {
    let cl = plat.cluster_of_cpu(cpu);
    cl.capacity_dmips_mhz as f64 / 1024.0 * cl.frequency.max_khz as f64 * 1e-6
}

/// The CPUs of the fastest cluster (highest capacity × f_max): where EAS puts a demanding
/// foreground thread. All CPUs on a homogeneous machine.
pub fn fastest_cpus(plat: &Platform) -> Vec<usize> {
    let speed = |c: usize| top_cycles_per_ns(plat, c);
    let best = (0..plat.ncpus()).map(speed).fold(0.0, f64::max);
    (0..plat.ncpus()).filter(|&c| speed(c) >= best * 0.999).collect()
}

/// The `p`-th percentile (0–100) of `samples` by the nearest-rank rule; 0 when empty.
pub fn percentile(samples: &[u64], p: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let mut v = samples.to_vec();
    v.sort_unstable();
    let rank = ((p / 100.0 * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1] as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_uses_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&v, 100.0), 100.0);
        assert_eq!(percentile(&[5], 50.0), 5.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }

    #[test]
    fn per_second_divides_a_counter_by_the_simulated_time() {
        let s = RunStats { sim_time_ns: 500_000_000, counters: vec![0, 300], ..RunStats::default() };
        assert_eq!(per_second(&s, 1), 600.0);
        // A counter the run never touched, and a run of no time, count nothing.
        assert_eq!(per_second(&s, 7), 0.0);
        assert_eq!(per_second(&RunStats { counters: vec![3], ..RunStats::default() }, 0), 0.0);
    }

    #[test]
    fn elapsed_extrapolates_an_unfinished_run() {
        let s = RunStats { sim_time_ns: 2_000_000_000, counters: vec![5], ..RunStats::default() };
        assert_eq!(elapsed_s(&s, 0, 5), 2.0);
        assert_eq!(elapsed_s(&s, 0, 10), 4.0);
    }
}
