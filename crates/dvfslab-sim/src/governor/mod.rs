//! The cpufreq governor interface and the registry of governors by name.
//!
//! A governor instance decides for one policy. It sees what a kernel governor sees through
//! [`PolicyCtx`]: the policy's CPUs, their utilisation, idle time and counters, the limits and
//! the frequency table, and it asks the driver for a frequency. The simulation and a replay of
//! a recorded trace each implement [`PolicyCtx`]. Adding a governor means one
//! file with an `INFO` and one line in [`REGISTRY`].

mod conservative;
mod context;
pub(crate) mod core;
mod dbs;
pub(crate) mod freq_table;
mod intel_pstate;
mod intel_pstate_hwp;
mod intel_pstate_load;
mod intel_pstate_pid;
pub mod kernel_c;
pub(crate) mod margins;
mod ondemand;
mod performance;
mod powersave;
mod schedutil;
#[cfg(test)]
pub(crate) mod scripted;
mod userspace;

use crate::error::{Result, SimError};
use crate::hw::platform::Platform;
use crate::kernel::KernelVersion;
use crate::spec::{Knob, KnobValues, Spec};

pub use context::{CpuSignals, PolicyCtx, TaskSignals};
pub use core::PolicyFacts;
pub use freq_table::Relation;

/// Why the scheduler called the governor (cpufreq_update_util's flags).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpdateFlags {
    /// A task that waited on I/O was enqueued.
    pub iowait: bool,
    /// The callback runs on a CPU outside the policy: another CPU of the LLC enqueued a woken
    /// task here (4.14+; before, such an enqueue called no governor). schedutil and the DBS
    /// governors act on it only if the driver lets any CPU change the frequency
    /// ([`PolicyCtx::this_cpu_can_update`]); schedutil still records the iowait boost;
    /// intel_pstate ignores it entirely.
    pub remote: bool,
}

pub trait Governor {
    /// Called when the governor starts on the policy, and when its limits change.
    fn start(&mut self, ctx: &mut dyn PolicyCtx);
    /// Scheduler utilisation callback for one of the policy's CPUs.
    fn util_update(&mut self, _ctx: &mut dyn PolicyCtx, _cpu: usize, _flags: UpdateFlags) {}
    /// The governor's own timer, armed with [`PolicyCtx::arm_timer`], fired.
    fn timer(&mut self, _ctx: &mut dyn PolicyCtx) {}
    /// Whether the scheduler should call [`Governor::util_update`] at all (saves work for
    /// static governors).
    fn wants_util_updates(&self) -> bool {
        false
    }
    /// Replaying a recording: the kernel set the policy to `khz` at `time_ns`. A governor with
    /// a memory of its last decision (schedutil's next_freq and rate-limit timestamp) takes that
    /// one as its own, so each later decision is judged from the kernel's state rather than from
    /// the model's earlier choices.
    fn adopt_recorded(&mut self, _khz: u32, _time_ns: u64) {}
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
    /// Rules across tunables that their ranges cannot state (the kernel's sysfs store
    /// functions refuse a crossed pair); see [`no_cross_check`].
    pub check: fn(&KnobValues) -> Checked,
    /// What the tunables need of the machine (HWP needs an HWP-capable part); see
    /// [`runs_anywhere`].
    pub check_platform: fn(&KnobValues, &Platform) -> Checked,
    pub build: fn(&KnobValues) -> Box<dyn Governor>,
    /// What running this governor turns on elsewhere in the kernel.
    pub enables: Enables,
}

/// What a governor turns on around it: the kernel keys these on the governor in use, and so
/// does the simulator, through this declaration rather than by the governor's name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Enables {
    /// Frequency requests go straight from the scheduler's callback to the driver's
    /// `->fast_switch` where the driver has one (`cpufreq_enable_fast_switch`, called at the
    /// governor's init): powernv then sets its global P-state with the local one.
    pub fast_switch: bool,
    /// Energy-aware scheduling may run under it: `sched_is_eas_possible`
    /// (kernel/sched/topology.c) builds perf domains only under a governor that maps
    /// utilisation to frequency the way EAS predicts (`sugov_is_governor`).
    pub eas: bool,
}

impl Enables {
    /// A governor that turns nothing on.
    pub const NOTHING: Enables = Enables { fast_switch: false, eas: false };
}

/// The outcome of a governor's own check: on refusal, the field to blame and what was expected.
pub type Checked = std::result::Result<(), (&'static str, String)>;

/// For governors whose tunables are independent of one another.
pub fn no_cross_check(_: &KnobValues) -> Checked {
    Ok(())
}

/// For governors that run on every platform their driver drives.
pub fn runs_anywhere(_: &KnobValues, _: &Platform) -> Checked {
    Ok(())
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

/// Names of the `fits` system knob's values (`crate::sched::capacity::FitsRule`).
pub const FITS_CHOICES: &[(&str, f64)] = &[("80pct", 0.0), ("tick", 1.0)];

/// `invariant=`: -1 follows the kernel (`crate::hw::invariance::kernel_is_invariant`).
pub const INVARIANT_CHOICES: &[(&str, f64)] = &[("kernel", -1.0), ("off", 0.0), ("on", 1.0)];

/// Settings of the system around the governor, given in the same spec string because a
/// published configuration names them together (`schedutil:invariant=0`).
pub const SYSTEM_KNOBS: &[Knob] = &[
    Knob::new(
        "invariant",
        "enum",
        -1.0,
        -1.0,
        1.0,
        "frequency-invariant PELT: kernel (as the simulated kernel has it on this platform), 0 or 1 (x86 APERF/MPERF, arm64 cpufreq scale; 1 is refused on POWER)",
    )
    .choices(INVARIANT_CHOICES),
    Knob::new("pelt_multiplier", "x", 1.0, 1.0, 4.0, "PELT time multiplier: 1, 2 or 4 (half-life 32, 16, 8 ms)").integer(),
    Knob::new("hz", "Hz", 0.0, 0.0, 1000.0, "scheduler tick rate: 100, 250, 300 or 1000 (0 = the platform's default)").integer(),
    Knob::new(
        "slow_rampdown",
        "bool",
        1.0,
        0.0,
        1.0,
        "powernv-cpufreq: let the chip's global (voltage) P-state fall over ~5 s (Linux 4.7+); 0 = follow the local one",
    ).integer(),
    Knob::new(
        "fits",
        "enum",
        0.0,
        0.0,
        1.0,
        "fits_capacity: 80pct (util < 0.8 capacity) or tick (util still below capacity after one tick, margins series)",
    )
    .choices(FITS_CHOICES),
    Knob::new(
        "eas",
        "bool",
        1.0,
        0.0,
        1.0,
        "energy-aware wake-up placement on asymmetric platforms with an Energy Model (needs schedutil, invariance)",
    ).integer(),
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
    /// Tunables set for one policy (`policyN.KEY=VALUE`, N its first CPU), each with the
    /// values that policy's governor gets: the spec's own, overridden by its keys.
    pub per_policy: Vec<(usize, KnobValues)>,
    /// A governor built from a kernel source file (`kernel:PATH`), else None.
    pub kernel_source: Option<std::sync::Arc<kernel_c::KernelGovernor>>,
}

/// A per-policy tunable's key: `policyN.KEY`, as sysfs spells the path of a governor's tunables
/// when the driver gives each policy its own (`/sys/devices/system/cpu/cpufreq/policyN/<gov>/KEY`,
/// CPUFREQ_HAVE_GOVERNOR_PER_POLICY, as Arm big.LITTLE drivers do).
fn per_policy_key(key: &str) -> Option<(usize, &str)> {
    let (policy, knob) = key.strip_prefix("policy")?.split_once('.')?;
    Some((policy.parse().ok()?, knob))
}

impl GovernorConfig {
    pub fn parse(text: &str) -> Result<(GovernorConfig, &'static GovernorInfo)> {
        if text.trim_start().starts_with(kernel_c::PREFIX) {
            return kernel_c::parse(text);
        }
        let spec = Spec::parse(text, "governor")?;
        let info = find(&spec.name)?;
        let mut all: Vec<Knob> = info.knobs.to_vec();
        all.extend_from_slice(SYSTEM_KNOBS);
        let text_keys: Vec<&str> = SYSTEM_TEXT_KEYS.iter().map(|(k, _)| *k).collect();
        let (shared, per_policy_params): (Vec<_>, Vec<_>) =
            spec.params.iter().cloned().partition(|(k, _)| per_policy_key(k).is_none());
        let shared_spec = Spec { name: spec.name.clone(), params: shared };
        let (values, text) = KnobValues::resolve(&shared_spec, &all, "governor", &text_keys)?;
        let owner = format!("governor '{}'", spec.name);
        let per_policy = Self::resolve_per_policy(info, (&all, &text_keys), &shared_spec, &per_policy_params)?;
        let pm = values.get("pelt_multiplier");
        if ![1.0, 2.0, 4.0].contains(&pm) {
            return Err(SimError::config(owner, "pelt_multiplier", format!("expected 1, 2 or 4, got {pm}")));
        }
        let hz = values.get("hz");
        if ![0.0, 100.0, 250.0, 300.0, 1000.0].contains(&hz) {
            return Err(SimError::config(owner, "hz", format!("expected 100, 250, 300 or 1000, got {hz}")));
        }
        (info.check)(&values).map_err(|(field, message)| SimError::config(&owner, field, message))?;
        let config = GovernorConfig { spec, values, text, per_policy, kernel_source: None };
        config.kernel().map_err(|e| match e {
            SimError::Config { message, .. } => SimError::config(&owner, "kernel", message),
            other => other,
        })?;
        Ok((config, info))
    }

    /// Each policy named in `policyN.KEY` keys gets the spec's values with its own keys
    /// overriding them; only the governor's tunables can differ by policy, not the system's
    /// settings. `knobs` are every knob a spec takes and the text keys passed through.
    fn resolve_per_policy(
        info: &GovernorInfo,
        (knobs, text_keys): (&[Knob], &[&str]),
        shared: &Spec,
        params: &[(String, String)],
    ) -> Result<Vec<(usize, KnobValues)>> {
        let mut policies: Vec<usize> = params.iter().filter_map(|(k, _)| per_policy_key(k)).map(|(n, _)| n).collect();
        policies.sort_unstable();
        policies.dedup();
        let own: Vec<&str> = info.knobs.iter().map(|k| k.name).collect();
        let mut out = Vec::new();
        for n in policies {
            let mut spec = shared.clone();
            let mut set_here: Vec<&str> = Vec::new();
            for (key, value) in params {
                let Some((m, knob)) = per_policy_key(key) else { continue };
                if m != n {
                    continue;
                }
                if !own.contains(&knob) {
                    let known = if own.is_empty() { "none".to_string() } else { own.join(", ") };
                    return Err(SimError::config(
                        format!("governor '{}'", info.name),
                        key,
                        format!("not a tunable of {} that a policy can set (known: {known})", info.name),
                    ));
                }
                spec.params.retain(|(k, _)| k != knob);
                spec.params.push((knob.to_string(), value.clone()));
                set_here.push(knob);
            }
            // Errors name the key as given: policyN.KEY.
            let in_policy = |field: &str, message: String| {
                SimError::config(format!("governor '{}'", info.name), format!("policy{n}.{field}"), message)
            };
            let (values, _) = KnobValues::resolve(&spec, knobs, "governor", text_keys).map_err(|e| match e {
                SimError::Config { field, message, .. } => in_policy(&field, message),
                other => other,
            })?;
            // A cross-check blames a key the policy set: the field itself if it did, else the
            // policy's own keys (the field then holds the value shared by every policy).
            (info.check)(&values).map_err(|(field, message)| {
                if set_here.contains(&field) {
                    return in_policy(field, message);
                }
                let keys: Vec<String> = set_here.iter().map(|k| format!("policy{n}.{k}")).collect();
                SimError::config(format!("governor '{}'", info.name), keys.join(", "), message)
            })?;
            out.push((n, values));
        }
        Ok(out)
    }

    /// The tunables the governor of the policy whose first CPU is `first_cpu` runs with.
    pub fn values_for_policy(&self, first_cpu: usize) -> &KnobValues {
        self.per_policy.iter().find(|(n, _)| *n == first_cpu).map_or(&self.values, |(_, v)| v)
    }

    /// The kernel version whose behaviour to simulate (`kernel=`, else the newest modelled).
    pub fn kernel(&self) -> Result<KernelVersion> {
        self.text_value("kernel").map_or(Ok(KernelVersion::DEFAULT), KernelVersion::parse)
    }

    /// Whether the configuration can run on `plat`: what the governor's tunables need of it,
    /// and a policy for every `policyN.` key.
    pub fn check_platform(&self, info: &GovernorInfo, plat: &Platform) -> Result<()> {
        let owner = format!("governor '{}'", info.name);
        (info.check_platform)(&self.values, plat)
            .map_err(|(field, message)| SimError::config(&owner, field, message))?;
        for (n, values) in &self.per_policy {
            if !plat.policies.iter().any(|p| p.cpus.first() == Some(n)) {
                let names: Vec<String> = plat.policies.iter().map(|p| format!("policy{}", p.cpus[0])).collect();
                return Err(SimError::config(
                    &owner,
                    format!("policy{n}"),
                    format!(
                        "no cpufreq policy starts at CPU {n} on {} (its policies: {})",
                        plat.file.id,
                        names.join(", ")
                    ),
                ));
            }
            (info.check_platform)(values, plat)
                .map_err(|(field, message)| SimError::config(&owner, format!("policy{n}.{field}"), message))?;
        }
        Ok(())
    }

    pub fn text_value(&self, key: &str) -> Option<&str> {
        self.text.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(spec: &str) -> String {
        match GovernorConfig::parse(spec) {
            Ok(_) => panic!("{spec} was accepted"),
            Err(e) => e.to_string(),
        }
    }

    /// Every sysfs and debugfs tunable is a whole number in Linux; the one knob of the model's
    /// own (a percentage scale of the margins series' default) may be fractional.
    #[test]
    fn tunables_are_whole_numbers_as_in_sysfs() {
        const FRACTIONAL: &[&str] = &["response_time_pct"];
        for info in REGISTRY {
            for k in info.knobs.iter().chain(SYSTEM_KNOBS) {
                assert_eq!(k.integer, !FRACTIONAL.contains(&k.name), "{} {}", info.name, k.name);
            }
        }
        for (spec, field) in [
            ("conservative:up_threshold=80.5", "up_threshold"),
            ("ondemand:sampling_down_factor=1.5", "sampling_down_factor"),
            ("intel_pstate:energy_performance_preference=127.5", "energy_performance_preference"),
            ("schedutil:rate_limit_us=0.5", "rate_limit_us"),
            ("userspace:scaling_setspeed=1000000.5", "scaling_setspeed"),
            ("schedutil:invariant=0.5", "invariant"),
        ] {
            let err = error_of(spec);
            assert!(err.contains(field) && err.contains("whole number"), "{spec}: {err}");
        }
    }

    #[test]
    fn defaults_and_choices_lie_in_their_ranges() {
        for info in REGISTRY {
            for k in info.knobs.iter().chain(SYSTEM_KNOBS) {
                let values = std::iter::once(k.default).chain(k.choices.iter().map(|(_, v)| *v));
                for v in values {
                    assert!((k.min..=k.max).contains(&v), "{} {}: {v}", info.name, k.name);
                    assert!(!k.integer || v.fract() == 0.0, "{} {}: {v}", info.name, k.name);
                }
            }
        }
    }

    #[test]
    fn conservative_refuses_crossed_thresholds() {
        for spec in ["conservative:up_threshold=20,down_threshold=30", "conservative:up_threshold=20,down_threshold=20"]
        {
            let err = error_of(spec);
            assert!(err.contains("governor 'conservative': up_threshold: must be above down_threshold"), "{err}");
        }
        // The defaults of the one not given count: down_threshold 20.
        assert!(error_of("conservative:up_threshold=15").contains("down_threshold=20"));
        assert!(GovernorConfig::parse("conservative:up_threshold=30,down_threshold=29").is_ok());
    }

    #[test]
    fn intel_pstate_refuses_a_minimum_above_the_maximum() {
        let err = error_of("intel_pstate:min_perf_pct=60,max_perf_pct=50");
        assert!(err.contains("governor 'intel_pstate': min_perf_pct: must not exceed max_perf_pct"), "{err}");
        assert!(GovernorConfig::parse("intel_pstate:min_perf_pct=50,max_perf_pct=50").is_ok());
    }

    /// `policyN.KEY` overrides one of the governor's own tunables for the policy whose first
    /// CPU is N; the rest keep the spec's values.
    #[test]
    fn a_tunable_can_be_set_for_one_policy() {
        let (cfg, _) = GovernorConfig::parse("schedutil:rate_limit_us=2000,policy4.rate_limit_us=40000").unwrap();
        assert_eq!(cfg.values_for_policy(0).get("rate_limit_us"), 2000.0);
        assert_eq!(cfg.values_for_policy(4).get("rate_limit_us"), 40000.0);
        assert_eq!(cfg.values_for_policy(6).get("rate_limit_us"), 2000.0);
        // The system's settings are the same for every policy.
        let (cfg, _) = GovernorConfig::parse("schedutil:hz=250,policy4.rate_limit_us=40000").unwrap();
        assert_eq!((cfg.values_for_policy(0).get("hz"), cfg.values_for_policy(4).get("hz")), (250.0, 250.0));
        // A per-policy key alone overrides the default for that policy only.
        let (cfg, _) = GovernorConfig::parse("ondemand:policy1.up_threshold=90").unwrap();
        assert_eq!(
            (cfg.values_for_policy(0).get("up_threshold"), cfg.values_for_policy(1).get("up_threshold")),
            (95.0, 90.0)
        );
        assert!(error_of("schedutil:policy1.hz=100").contains("policy1.hz: not a tunable of schedutil"));
        assert!(error_of("schedutil:policy1.rate=1").contains("known: rate_limit_us"));
        assert!(error_of("ondemand:policy0.up_threshold=101").contains("policy0.up_threshold: 101 is out of range"));
        // The governor's own cross-checks run on each policy's values.
        let err = error_of("conservative:policy2.up_threshold=10");
        assert!(err.contains("policy2.up_threshold: must be above down_threshold"), "{err}");
        // A check broken by a shared value and a policy's own blames the policy's key.
        let err = error_of("conservative:up_threshold=50,policy0.down_threshold=60");
        assert!(err.contains("'conservative': policy0.down_threshold: must be above down_threshold"), "{err}");
    }

    #[test]
    fn tick_rates_are_the_kernel_configs() {
        for hz in ["100", "250", "300", "1000", "0"] {
            assert!(GovernorConfig::parse(&format!("schedutil:hz={hz}")).is_ok(), "{hz}");
        }
        for hz in ["200", "999", "1"] {
            assert!(error_of(&format!("schedutil:hz={hz}")).contains("expected 100, 250, 300 or 1000"), "{hz}");
        }
    }

    #[test]
    fn unmodelled_kernels_are_refused_when_the_spec_is_read() {
        let err = error_of("schedutil:kernel=6.19");
        assert!(err.starts_with("governor 'schedutil': kernel: 6.19 is not a modelled version"), "{err}");
        assert!(err.contains("4.7-4.20, 5.0-5.19, 6.0-6.18"), "{err}");
        assert!(error_of("ondemand:kernel=5.x").contains("expected a version such as 5.9"));
        assert!(GovernorConfig::parse("schedutil:kernel=4.19").is_ok());
    }
}
