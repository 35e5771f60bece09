//! Kernel versions, for behaviour that changed over time (`kernel=6.8` in a governor spec),
//! and the cpufreq core's default transition delay, which schedutil uses as its default
//! `rate_limit_us` (`cpufreq_policy_transition_delay_us`; docs/governors.md).

use crate::error::{Result, SimError};

/// A mainline version, compared as (major, minor): 5.10 comes after 5.9.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct KernelVersion(pub u32, pub u32);

impl KernelVersion {
    /// The behaviour simulated when the spec does not say: the newest covered.
    pub const DEFAULT: KernelVersion = KernelVersion(6, 18);

    pub fn parse(text: &str) -> Result<KernelVersion> {
        let bad = || {
            SimError::config(
                "governor",
                "kernel",
                format!("expected a version such as 5.9 or 6.12 ({}), got '{text}'", modelled_versions()),
            )
        };
        let (major, minor) = text.trim().split_once('.').ok_or_else(bad)?;
        let v = KernelVersion(major.parse().map_err(|_| bad())?, minor.parse().map_err(|_| bad())?);
        if !v.is_modelled() {
            return Err(SimError::config(
                "governor",
                "kernel",
                format!("{text} is not a modelled version; modelled: {}", modelled_versions()),
            ));
        }
        Ok(v)
    }

    /// A mainline release from schedutil's first (4.7) to the newest covered.
    fn is_modelled(self) -> bool {
        MAINLINE_SERIES.iter().any(|&(major, first, last)| self.0 == major && (first..=last).contains(&self.1))
    }
}

/// The mainline releases simulated, as (major, first minor, last minor): schedutil appeared in
/// 4.7, each series ended at 4.20 and 5.19, and [`KernelVersion::DEFAULT`] is the newest.
const MAINLINE_SERIES: &[(u32, u32, u32)] = &[(4, 7, 20), (5, 0, 19), (6, 0, KernelVersion::DEFAULT.1)];

/// The modelled versions as text: "4.7-4.20, 5.0-5.19, 6.0-6.18".
pub fn modelled_versions() -> String {
    let ranges: Vec<String> =
        MAINLINE_SERIES.iter().map(|&(major, first, last)| format!("{major}.{first}-{major}.{last}")).collect();
    ranges.join(", ")
}

impl std::fmt::Display for KernelVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

/// What `cpuinfo.transition_latency` reads when a driver cannot tell (CPUFREQ_ETERNAL, -1 as
/// u32 ns), and what such drivers report since the 2025 fix (1 ms).
const CPUFREQ_ETERNAL_NS: u64 = u32::MAX as u64;
const DEFAULT_TRANSITION_LATENCY_NS: u64 = 1_000_000;

/// Default `rate_limit_us` of schedutil (`sugov_init`; from 4.14 through the cpufreq core's
/// `cpufreq_policy_transition_delay_us`): the driver's own `transition_delay_us` if it sets one
/// (read from 4.12), else a rule on the reported latency that changed over the years:
///
/// ```text
///   4.7  – 4.13   1000 · lat                       (1000 µs if lat = 0)
///   4.14 – 6.8    min(1000 · lat, 10 ms)
///   6.9  – 6.11   lat if lat > 2 ms, else min(1000 · lat, 2 ms)
///   6.12 –        1.5 · lat                        (unknown latency: ETERNAL before 6.18, 1 ms after)
/// ```
/// `lat` in µs; `latency_ns` None means the driver reported none (CPUFREQ_ETERNAL).
pub fn default_transition_delay_us(
    kernel: KernelVersion,
    driver_delay_us: Option<u64>,
    latency_ns: Option<u64>,
) -> u64 {
    // sugov_init takes policy->transition_delay_us first from 4.12 on (4.11 has no such field).
    if let (Some(d), true) = (driver_delay_us, kernel >= KernelVersion(4, 12)) {
        return d;
    }
    let latency_ns = match latency_ns {
        Some(ns) => ns,
        None if kernel >= KernelVersion(6, 18) => DEFAULT_TRANSITION_LATENCY_NS,
        None => CPUFREQ_ETERNAL_NS,
    };
    let lat = latency_ns / 1000;
    if lat == 0 {
        return 1000;
    }
    if kernel < KernelVersion(4, 14) {
        lat * 1000
    } else if kernel < KernelVersion(6, 9) {
        (lat * 1000).min(10_000)
    } else if kernel < KernelVersion(6, 12) {
        if lat > 2000 {
            lat
        } else {
            (lat * 1000).min(2000)
        }
    } else {
        lat + lat / 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_numerically() {
        assert!(KernelVersion::parse("5.10").unwrap() > KernelVersion::parse("5.9").unwrap());
        assert!(KernelVersion::parse("six").is_err());
    }

    #[test]
    fn only_mainline_releases_from_4_7_to_the_default_are_modelled() {
        for ok in ["4.7", "4.20", "5.0", "5.19", "6.0", "6.18"] {
            assert!(KernelVersion::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["4.6", "4.21", "5.20", "6.19", "7.0", "3.10", "9.99"] {
            let err = KernelVersion::parse(bad).unwrap_err().to_string();
            assert!(err.contains("kernel") && err.contains("4.7-4.20, 5.0-5.19, 6.0-6.18"), "{bad}: {err}");
        }
    }

    #[test]
    fn rate_limit_defaults_per_kernel_era() {
        // acpi-cpufreq reporting 10 µs.
        let lat = Some(10_000);
        assert_eq!(default_transition_delay_us(KernelVersion(5, 9), None, lat), 10_000);
        // 6.8 still caps the x1000 rule at 10 ms (cpufreq_policy_transition_delay_us, 6.8);
        // the 2 ms cap is 6.9's.
        assert_eq!(default_transition_delay_us(KernelVersion(6, 8), None, lat), 10_000);
        assert_eq!(default_transition_delay_us(KernelVersion(6, 9), None, lat), 2_000);
        assert_eq!(default_transition_delay_us(KernelVersion(6, 10), None, lat), 2_000);
        assert_eq!(default_transition_delay_us(KernelVersion(6, 12), None, lat), 15);
        // Pixel 6: clock-latency 500 µs -> 10 ms on 6.8, 2 ms on 6.9-6.11, 750 µs on 6.12+.
        assert_eq!(default_transition_delay_us(KernelVersion(6, 8), None, Some(500_000)), 10_000);
        assert_eq!(default_transition_delay_us(KernelVersion(6, 9), None, Some(500_000)), 2000);
        assert_eq!(default_transition_delay_us(KernelVersion(6, 12), None, Some(500_000)), 750);
        // Juno: 1450 µs is below 2 ms, so 6.9 still caps the x1000 rule at 2 ms.
        assert_eq!(default_transition_delay_us(KernelVersion(6, 9), None, Some(1_450_000)), 2000);
        assert_eq!(default_transition_delay_us(KernelVersion(6, 9), None, Some(2_500_000)), 2500);
        // intel_cpufreq sets its own delay, which sugov_init reads from 4.12; 4.11 multiplies
        // its 20 µs latency.
        assert_eq!(default_transition_delay_us(KernelVersion(5, 9), Some(500), Some(20_000)), 500);
        assert_eq!(default_transition_delay_us(KernelVersion(4, 12), Some(500), Some(20_000)), 500);
        assert_eq!(default_transition_delay_us(KernelVersion(4, 11), Some(500), Some(20_000)), 20_000);
        // Unknown latency: 10 ms on 4.14-6.7, 1.5 ms once the 2025 fix reports 1 ms.
        assert_eq!(default_transition_delay_us(KernelVersion(5, 9), None, None), 10_000);
        assert_eq!(default_transition_delay_us(KernelVersion(6, 18), None, None), 1500);
    }
}
