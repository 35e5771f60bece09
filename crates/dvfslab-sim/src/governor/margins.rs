//! The margins series (Qais Yousef, 2023; docs/heterogeneous.md): DVFS headroom and response
//! time derived from real limits instead of the 1.25 constant.
//!
//! ```text
//!   headroom:      perf = approximate_util_avg(util, rate_limit_us)   util may grow until the next
//!                                                                      DVFS decision and still be served
//!   response time: default_ms = approximate_runtime(cap2 + 1)          cap2 = capacity at the second-highest OPP
//!                  mult = default_ms · 1024 / response_time_ms
//!                  util' = mult · util >> 10                           applied before the headroom
//! ```
//! Not merged upstream; simulated as posted in v2 (8 Dec 2023).

use crate::governor::freq_table::table_lookup;
use crate::governor::Relation;
use crate::sched::pelt::{approximate_runtime_steps, approximate_util_avg};

/// Headroom of the series: util after growing for one DVFS update interval, in PELT time
/// (the multiplier's shift applied to the interval).
pub fn dvfs_headroom(util: u64, rate_limit_us: u64, pelt_lshift: u32) -> u64 {
    approximate_util_avg(util, rate_limit_us << pelt_lshift)
}

/// Default `response_time_ms` of a policy (v2): the time util needs to ramp from 0 past the
/// capacity of the second-highest frequency, at which schedutil already asks for the top one.
pub fn default_response_time_ms(table_khz: &[u32], cap_orig: u64, pelt_lshift: u32) -> u64 {
    let max = *table_khz.last().expect("a non-empty table") as u64;
    let f2 = table_lookup(table_khz, (max - 1) as u32, Relation::H) as u64;
    let cap2 = f2 * cap_orig / max;
    approximate_runtime_steps(cap2 + 1, pelt_lshift)
}

/// The response-time multiplier (×1024): 1024 when the user keeps the default.
pub fn response_time_mult(default_ms: u64, response_time_ms: u64) -> u64 {
    if response_time_ms == 0 {
        return 1024;
    }
    default_ms * 1024 / response_time_ms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headroom_values_of_the_spec() {
        // Headroom with rate_limit_us = 2000: 100→138, 256→287, 512→533, 800→809; 10 ms: 276/402/609/842.
        for (u, want) in [(100, 138), (256, 287), (512, 533), (800, 809)] {
            assert_eq!(dvfs_headroom(u, 2000, 0), want, "util {u}");
        }
        for (u, want) in [(100, 276), (256, 402), (512, 609), (800, 842)] {
            assert_eq!(dvfs_headroom(u, 10_000, 0), want, "util {u}");
        }
    }

    #[test]
    fn response_time_examples_of_the_spec() {
        // Default response_time_ms: cap 1024 with ... 2.8, 3.0 GHz -> cap2 955 -> 125 ms; setting 62 ms -> mult 2064.
        let big = [2_000_000, 2_400_000, 2_800_000, 3_000_000];
        assert_eq!(default_response_time_ms(&big, 1024, 0), 125);
        assert_eq!(response_time_mult(125, 62), 2064);
        assert_eq!((2064 * 400) >> 10, 806);
        // mid cap 512 with 1.8/2.0 GHz -> 28 ms; little cap 160 with 1.0/1.2 GHz -> 7 ms.
        assert_eq!(default_response_time_ms(&[1_800_000, 2_000_000], 512, 0), 28);
        assert_eq!(default_response_time_ms(&[1_000_000, 1_200_000], 160, 0), 7);
    }
}
