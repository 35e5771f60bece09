//! The cpufreq governor interface and the registry of governors by name.
//!
//! A governor instance decides for one policy. It sees what a kernel governor sees through
//! [`PolicyCtx`]: the policy's CPUs, their utilisation, idle time and counters, the limits and
//! the frequency table, and it asks the driver for a frequency. Adding a governor means one
//! file with an `INFO` and one line in [`REGISTRY`].

mod conservative;
mod dbs;
mod intel_pstate;
mod intel_pstate_hwp;
mod intel_pstate_load;
mod intel_pstate_pid;
pub(crate) mod margins;
mod ondemand;
mod performance;
mod powersave;
mod schedutil;
mod userspace;

use crate::error::{Result, SimError};
use crate::spec::{Knob, KnobValues, Spec};

pub use crate::sim::PolicyCtx;

/// How a requested frequency is matched to the table (cpufreq's CPUFREQ_RELATION_*).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relation {
    /// Lowest frequency at or above the target.
    L,
    /// Highest frequency at or below the target.
    H,
    /// Closest; ties go to the lower.
    C,
}

/// Why the scheduler called the governor (cpufreq_update_util's flags).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpdateFlags {
    /// A task that waited on I/O was enqueued.
    pub iowait: bool,
    /// The callback runs on a CPU outside the policy: another CPU of the LLC enqueued a woken
    /// task here. Fast-switching governors cannot act on it (cpufreq_this_cpu_can_update);
    /// schedutil still records the iowait boost, intel_pstate ignores it entirely.
    pub remote: bool,
}

pub trait Governor {
    /// Called when the governor starts on the policy, and when its limits change.
    fn start(&mut self, ctx: &mut PolicyCtx);
    /// Scheduler utilisation callback for one of the policy's CPUs.
    fn util_update(&mut self, _ctx: &mut PolicyCtx, _cpu: usize, _flags: UpdateFlags) {}
    /// The governor's own timer, armed with [`PolicyCtx::arm_timer`], fired.
    fn timer(&mut self, _ctx: &mut PolicyCtx) {}
    /// Whether the scheduler should call [`Governor::util_update`] at all (saves work for
    /// static governors).
    fn wants_util_updates(&self) -> bool {
        false
    }
    /// The perf a utilisation-driven governor asks for `actual` on a CPU of capacity `cap`
    /// (its DVFS headroom, sugov_effective_cpu_perf without clamps), for EAS to predict the
    /// OPP with. None: not utilisation-driven.
    fn dvfs_headroom(&self, _actual: u64, _cap: u64) -> Option<u64> {
        None
    }
}

/// A governor as the registry knows it.
pub struct GovernorInfo {
    pub name: &'static str,
    pub description: &'static str,
    pub knobs: &'static [Knob],
    /// The driver this governor belongs to (intel_pstate's own algorithms), or None to run
    /// on the platform's driver.
    pub driver: Option<&'static str>,
    pub build: fn(&KnobValues) -> Box<dyn Governor>,
}

/// Every governor, by the name Linux gives it.
pub const REGISTRY: &[&GovernorInfo] = &[
    &intel_pstate::INFO,
    &ondemand::INFO,
    &conservative::INFO,
    &performance::INFO,
    &powersave::INFO,
    &schedutil::INFO,
    &userspace::INFO,
];

/// Settings of the system around the governor, given in the same spec string because a
/// published configuration names them together (`schedutil:invariant=0`).
pub const SYSTEM_KNOBS: &[Knob] = &[
    Knob::new("invariant", "bool", 1.0, 0.0, 1.0, "frequency-invariant PELT (x86 APERF/MPERF, arm64 cpufreq scale)"),
    Knob::new("pelt_multiplier", "x", 1.0, 1.0, 4.0, "PELT time multiplier: 1, 2 or 4 (half-life 32, 16, 8 ms)"),
    Knob::new("hz", "Hz", 0.0, 0.0, 1000.0, "scheduler tick rate: 100, 250, 300 or 1000 (0 = the platform's default)"),
    Knob::new(
        "slow_rampdown",
        "bool",
        1.0,
        0.0,
        1.0,
        "powernv-cpufreq: let the chip's global (voltage) P-state fall over ~5 s (Linux 4.8+); 0 = follow the local one",
    ),
    Knob::new(
        "fits",
        "enum",
        0.0,
        0.0,
        1.0,
        "fits_capacity: 80pct (util < 0.8 capacity) or tick (util still below capacity after one tick, margins series)",
    )
    .choices(crate::capacity::FITS_CHOICES),
    Knob::new(
        "eas",
        "bool",
        1.0,
        0.0,
        1.0,
        "energy-aware wake-up placement on asymmetric platforms with an Energy Model (needs schedutil, invariance)",
    ),
];

/// System keys that take text rather than numbers, with what they mean.
pub const SYSTEM_TEXT_KEYS: &[(&str, &str)] = &[
    ("freq_max", "invariance reference: 1c..Nc turbo bin, base, maxp, maxboost, midpoint, or kHz (default: 4c Intel, midpoint AMD, max elsewhere)"),
    ("kernel", "kernel version whose behaviour to simulate, e.g. 5.9, 6.8, 6.12 (default 6.18)"),
    ("driver", "cpufreq driver: acpi-cpufreq, intel_cpufreq, intel_pstate, cpufreq-dt, scmi, powernv-cpufreq (default: the platform's)"),
];

pub fn find(name: &str) -> Result<&'static GovernorInfo> {
    REGISTRY.iter().copied().find(|g| g.name == name).ok_or_else(|| {
        let known: Vec<&str> = REGISTRY.iter().map(|g| g.name).collect();
        SimError::config("governor", name, format!("unknown governor (known: {})", known.join(", ")))
    })
}

/// A parsed governor configuration: which governor, its tunables and the system settings
/// (all numeric values in one set), and the text-valued system keys.
#[derive(Clone, Debug)]
pub struct GovernorConfig {
    pub spec: Spec,
    pub values: KnobValues,
    pub text: Vec<(String, String)>,
}

impl GovernorConfig {
    pub fn parse(text: &str) -> Result<(GovernorConfig, &'static GovernorInfo)> {
        let spec = Spec::parse(text, "governor")?;
        let info = find(&spec.name)?;
        let mut all: Vec<Knob> = info.knobs.to_vec();
        all.extend_from_slice(SYSTEM_KNOBS);
        let text_keys: Vec<&str> = SYSTEM_TEXT_KEYS.iter().map(|(k, _)| *k).collect();
        let (values, text) = KnobValues::resolve(&spec, &all, "governor", &text_keys)?;
        let owner = format!("governor '{}'", spec.name);
        let pm = values.get("pelt_multiplier");
        if ![1.0, 2.0, 4.0].contains(&pm) {
            return Err(SimError::config(owner, "pelt_multiplier", format!("expected 1, 2 or 4, got {pm}")));
        }
        let hz = values.get("hz");
        if ![0.0, 100.0, 250.0, 300.0, 1000.0].contains(&hz) {
            return Err(SimError::config(owner, "hz", format!("expected 100, 250, 300 or 1000, got {hz}")));
        }
        Ok((GovernorConfig { spec, values, text }, info))
    }

    pub fn text_value(&self, key: &str) -> Option<&str> {
        self.text.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}
