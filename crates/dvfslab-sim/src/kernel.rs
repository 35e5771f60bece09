//! Kernel versions, for behaviour that changed over time (`kernel=6.8` in a governor spec),
//! and the cpufreq core's default transition delay, which schedutil uses as its default
//! `rate_limit_us` (`cpufreq_policy_transition_delay_us`; docs/governors.md).

use crate::error::{Result, SimError};

/// A kernel version, compared as (major, minor, stable): 5.10 comes after 5.9, and 6.18.5 after
/// 6.18. The stable update (0 for the mainline release) matters only where a stable series
/// took a change of behaviour from a later release ([`KernelVersion::has_backport`]; the one
/// modelled is new-idle balancing's lottery, `sched/newidle.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct KernelVersion(pub u32, pub u32, pub u32);

impl KernelVersion {
    /// The behaviour simulated when the spec does not say: the newest covered.
    pub const DEFAULT: KernelVersion = KernelVersion(6, 18, 0);

    pub fn parse(text: &str) -> Result<KernelVersion> {
        let bad = || {
            SimError::config(
                "governor",
                "kernel",
                format!("expected a version such as 5.9, 6.12 or 6.18.44 ({}), got '{text}'", modelled_versions()),
            )
        };
        let numbers: Vec<&str> = text.trim().split('.').collect();
        let number = |i: usize| numbers.get(i).map_or(Ok(0), |n| n.parse::<u32>().map_err(|_| bad()));
        if !(2..=3).contains(&numbers.len()) {
            return Err(bad());
        }
        let v = KernelVersion(number(0)?, number(1)?, number(2)?);
        if !v.is_modelled() {
            return Err(SimError::config(
                "governor",
                "kernel",
                format!("{text} is not a modelled version; modelled: {}", modelled_versions()),
            ));
        }
        Ok(v)
    }

    /// Whether this is a stable update that has a backport first shipped in `first` (one
    /// version per series that took it): the same series, at that update or later.
    pub fn has_backport(self, first: &[KernelVersion]) -> bool {
        first.iter().any(|f| (self.0, self.1) == (f.0, f.1) && self.2 >= f.2)
    }

    /// A mainline release from schedutil's first (4.7) to the newest covered, or a stable
    /// update of one.
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
        match self.2 {
            0 => write!(f, "{}.{}", self.0, self.1),
            stable => write!(f, "{}.{}.{stable}", self.0, self.1),
        }
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
    if let (Some(d), true) = (driver_delay_us, kernel >= KernelVersion(4, 12, 0)) {
        return d;
    }
    let latency_ns = match latency_ns {
        Some(ns) => ns,
        None if kernel >= KernelVersion(6, 18, 0) => DEFAULT_TRANSITION_LATENCY_NS,
        None => CPUFREQ_ETERNAL_NS,
    };
    let lat = latency_ns / 1000;
    if lat == 0 {
        return 1000;
    }
    if kernel < KernelVersion(4, 14, 0) {
        lat * 1000
    } else if kernel < KernelVersion(6, 9, 0) {
        (lat * 1000).min(10_000)
    } else if kernel < KernelVersion(6, 12, 0) {
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
    fn a_stable_update_follows_its_release_and_prints_as_given() {
        let v = KernelVersion::parse("6.18.44").unwrap();
        assert_eq!(v, KernelVersion(6, 18, 44));
        assert!(v > KernelVersion(6, 18, 0) && v < KernelVersion(6, 19, 0) && v >= KernelVersion(6, 17, 0));
        assert_eq!(
            (v.to_string(), KernelVersion::parse("6.18").unwrap().to_string()),
            ("6.18.44".into(), "6.18".into())
        );
        for bad in ["6.18.", "6.18.x", "6.18.44.1", "6", "6.18.44-rc1"] {
            let err = KernelVersion::parse(bad).unwrap_err().to_string();
            assert!(err.contains("6.18.44"), "{bad}: {err}");
        }
        // A stable update of a release that is not modelled is refused like the release.
        assert!(KernelVersion::parse("6.19.3").is_err());
        // Backports are per series: 6.18.5 and later of 6.18, not 6.17's updates.
        let first = [KernelVersion(6, 12, 65), KernelVersion(6, 18, 5)];
        assert!(KernelVersion(6, 18, 5).has_backport(&first) && KernelVersion(6, 12, 70).has_backport(&first));
        assert!(!KernelVersion(6, 18, 4).has_backport(&first) && !KernelVersion(6, 17, 99).has_backport(&first));
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
        assert_eq!(default_transition_delay_us(KernelVersion(5, 9, 0), None, lat), 10_000);
        // 6.8 still caps the x1000 rule at 10 ms (cpufreq_policy_transition_delay_us, 6.8);
        // the 2 ms cap is 6.9's.
        assert_eq!(default_transition_delay_us(KernelVersion(6, 8, 0), None, lat), 10_000);
        assert_eq!(default_transition_delay_us(KernelVersion(6, 9, 0), None, lat), 2_000);
        assert_eq!(default_transition_delay_us(KernelVersion(6, 10, 0), None, lat), 2_000);
        assert_eq!(default_transition_delay_us(KernelVersion(6, 12, 0), None, lat), 15);
        // Pixel 6: clock-latency 500 µs -> 10 ms on 6.8, 2 ms on 6.9-6.11, 750 µs on 6.12+.
        assert_eq!(default_transition_delay_us(KernelVersion(6, 8, 0), None, Some(500_000)), 10_000);
        assert_eq!(default_transition_delay_us(KernelVersion(6, 9, 0), None, Some(500_000)), 2000);
        assert_eq!(default_transition_delay_us(KernelVersion(6, 12, 0), None, Some(500_000)), 750);
        // Juno: 1450 µs is below 2 ms, so 6.9 still caps the x1000 rule at 2 ms.
        assert_eq!(default_transition_delay_us(KernelVersion(6, 9, 0), None, Some(1_450_000)), 2000);
        assert_eq!(default_transition_delay_us(KernelVersion(6, 9, 0), None, Some(2_500_000)), 2500);
        // intel_cpufreq sets its own delay, which sugov_init reads from 4.12; 4.11 multiplies
        // its 20 µs latency.
        assert_eq!(default_transition_delay_us(KernelVersion(5, 9, 0), Some(500), Some(20_000)), 500);
        assert_eq!(default_transition_delay_us(KernelVersion(4, 12, 0), Some(500), Some(20_000)), 500);
        assert_eq!(default_transition_delay_us(KernelVersion(4, 11, 0), Some(500), Some(20_000)), 20_000);
        // Unknown latency: 10 ms on 4.14-6.7, 1.5 ms once the 2025 fix reports 1 ms.
        assert_eq!(default_transition_delay_us(KernelVersion(5, 9, 0), None, None), 10_000);
        assert_eq!(default_transition_delay_us(KernelVersion(6, 18, 0), None, None), 1500);
    }
}
