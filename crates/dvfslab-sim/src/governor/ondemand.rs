//! ondemand: sample how busy the policy's CPUs were; above `up_threshold` jump to the maximum,
//! otherwise pick a frequency proportional to the load.
//!
//! What it models: `cpufreq_ondemand` of kernels ≥ 4.7 (`od_update`) on the
//! sampling machinery of `dbs.rs` (load = the busiest CPU's busy share since the last sample):
//!
//! ```text
//!   load > up_threshold:  policy max, RELATION_H; when coming from below max, the next sample
//!                         is sampling_down_factor periods away (rate_mult)              (od_update)
//!   otherwise:            f = cpuinfo_min + load · (cpuinfo_max − cpuinfo_min) / 100,
//!                         closest table entry (RELATION_C); rate_mult = 1
//!   powersave_bias b ‰:   approach f_req · (1 − b/1000) by spending part of each period on
//!                         the entry above and the rest on the entry below it
//!                         (generic_powersave_bias_target):
//!       avg = f_req − f_req · b / 1000      lo = highest entry ≤ avg,  hi = lowest entry ≥ avg
//!       t_hi = ((avg − lo) · sampling_rate + (hi − lo)/2) / (hi − lo)   µs at hi, RELATION_L
//!       t_lo = sampling_rate − t_hi                                     µs at lo, RELATION_H
//! ```
//!
//! Differences from Linux: the sample is taken inside the scheduler callback (Linux defers it
//! to irq_work and a kworker on that CPU, whose few µs of work count as busy time);
//! `io_is_busy` counts as busy the idle time of a CPU on which a task sleeps in I/O wait,
//! split where the count of such tasks changes (Linux's tick-sched classifies each idle period
//! by the count when it ends or is read); `ignore_nice_load` is accepted
//! but changes nothing, all tasks being nice 0; a `sampling_rate` below the kernel's floor (two ticks, 10 ms before 4.14) is raised
//! to it rather than rejected, because the tick is known only when the run starts;
//! `powersave_bias` above 1000 is rejected (Linux clamps it); cpuinfo min is the bottom of the
//! driver's table and cpuinfo max the driver's `cpuinfo.max_freq` (above the table with
//! acpi-cpufreq and CPPC from 5.12); the efficient relations of ≥ 5.16 (`RELATION_CE`...) act as the plain
//! ones (no entry is flagged inefficient); a long idle is detected from the idle time, as
//! Linux does since commit 7592019634f8 (2018); before it the elapsed time was used.
//!
//! Tunables: `sampling_rate` (µs; default 0 = max(2 ticks, the cpufreq transition delay of the
//! kernel version and driver), e.g. 8 ms at HZ=250 on 6.18, 10 ms with acpi-cpufreq on 5.9),
//! `up_threshold` (%, 95, 11..100), `sampling_down_factor` (1, 1..100 000), `powersave_bias`
//! (‰, 0, 0..1000), `ignore_nice_load` (0/1, 0), `io_is_busy` (kernel = 1 on Intel family 6
//! model ≥ 15, else 0; or 0/1).
//!
//! References: drivers/cpufreq/cpufreq_ondemand.c, cpufreq_governor.c;
//! Documentation/admin-guide/pm/cpufreq.rst; docs/governors.md.

use super::dbs::{Dbs, DbsGovernor};
use super::{Enables, Governor, GovernorInfo, PolicyCtx, Relation, UpdateFlags};
use crate::governor::freq_table::table_lookup;
use crate::hw::platform::{CpuIdFile, Vendor};
use crate::spec::{Knob, KnobValues};

pub const INFO: GovernorInfo = GovernorInfo {
    name: "ondemand",
    description: "sampling: maximum above up_threshold, else proportional to the busiest CPU's load",
    knobs: &[
        Knob::new("sampling_rate", "us", 0.0, 0.0, 4_294_967_295.0, "sampling period; 0 = the kernel's default")
            .integer(),
        Knob::new("up_threshold", "%", DEF_UP_THRESHOLD, 11.0, 100.0, "load above which to run at the maximum")
            .integer(),
        Knob::new("sampling_down_factor", "x", 1.0, 1.0, 100_000.0, "sampling periods to stay at the maximum")
            .integer(),
        Knob::new("powersave_bias", "per-mille", 0.0, 0.0, 1000.0, "lower targets by this, alternating 2 entries")
            .integer(),
        Knob::new("ignore_nice_load", "bool", 0.0, 0.0, 1.0, "niced time as idle (no effect: all tasks nice 0)")
            .integer(),
        Knob::new(
            "io_is_busy",
            "enum",
            -1.0,
            -1.0,
            1.0,
            "I/O wait as busy: kernel (1 on Intel family 6 model 15 and later, else 0), 0 or 1",
        )
        .choices(IO_IS_BUSY_CHOICES),
    ],
    driver: None,
    check: super::no_cross_check,
    check_platform: super::runs_anywhere,
    build: |k: &KnobValues| {
        let mut g = Ondemand::new(
            k.get_u64("sampling_rate"),
            k.get_u64("up_threshold") as u32,
            k.get_u64("sampling_down_factor"),
            k.get_u64("powersave_bias") as u32,
        );
        let io_is_busy = k.get("io_is_busy");
        g.io_is_busy = (io_is_busy >= 0.0).then_some(io_is_busy != 0.0);
        Box::new(g)
    },
    enables: Enables::NOTHING,
};

/// `io_is_busy=`: -1 takes the kernel's default for the CPU ([`should_io_be_busy`]).
const IO_IS_BUSY_CHOICES: &[(&str, f64)] = &[("kernel", -1.0)];

/// ondemand's default `io_is_busy` (`should_io_be_busy`, cpufreq_ondemand.c, unchanged since
/// before 4.7): only Intel family 6 from model 15 (Core 2) on, whose idle is efficient
/// enough; every other CPU (AMD, Arm, POWER) counts I/O wait as idle.
fn should_io_be_busy(vendor: Vendor, cpuid: Option<CpuIdFile>) -> bool {
    vendor == Vendor::Intel && cpuid.is_some_and(|id| id.family == 6 && id.model >= 15)
}

/// up_threshold default with NO_HZ idle micro-accounting (MICRO_FREQUENCY_UP_THRESHOLD; 80
/// without it, which the simulator never lacks).
const DEF_UP_THRESHOLD: f64 = 95.0;

struct Ondemand {
    dbs: Dbs,
    up_threshold: u32,
    sampling_down_factor: u64,
    powersave_bias: u32,
    /// The second half of a powersave_bias period, if the last evaluation split one.
    split: Option<BiasSplit>,
    /// The next sample only switches to the low entry of `split` (OD_SUB_SAMPLE).
    sub_sample_due: bool,
    /// `io_is_busy` as given; None takes [`should_io_be_busy`] at start.
    io_is_busy: Option<bool>,
    /// `cpuinfo.max_freq` (kHz), the top of the proportional range; 0 until start (then the
    /// table's top stands in).
    cpuinfo_max_khz: u32,
}

/// How a powersave_bias target is approached: the high entry first, then `lo_khz`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct BiasSplit {
    lo_khz: u32,
    hi_delay_us: u64,
    lo_delay_us: u64,
}

/// What one evaluation decided: a request (if any), the frequency it aimed at before the
/// table, and when to sample next.
#[derive(Debug, PartialEq, Eq)]
struct Step {
    target: Option<(u32, Relation)>,
    freq_next_khz: u32,
    delay_us: u64,
}

impl Ondemand {
    fn new(sampling_rate_us: u64, up_threshold: u32, sampling_down_factor: u64, powersave_bias: u32) -> Ondemand {
        Ondemand {
            dbs: Dbs::new(sampling_rate_us, DbsGovernor::Ondemand),
            up_threshold,
            sampling_down_factor,
            powersave_bias,
            split: None,
            sub_sample_due: false,
            io_is_busy: None,
            cpuinfo_max_khz: 0,
        }
    }

    /// One sample (od_dbs_update): either the low half of a powersave_bias split, or a load
    /// evaluation. Returns the delay until the next sample (µs).
    fn sample(&mut self, ctx: &mut dyn PolicyCtx) -> u64 {
        let sub_sample = std::mem::take(&mut self.sub_sample_due);
        if let (true, true, Some(split)) = (sub_sample, self.dbs.sample_delay_set(), self.split) {
            ctx.explain(&[
                ("powersave_bias", self.powersave_bias as f64),
                ("freq_lo_khz", split.lo_khz as f64),
                ("freq_lo_delay_us", split.lo_delay_us as f64),
            ]);
            ctx.request_khz(split.lo_khz, Relation::H);
            return split.lo_delay_us;
        }
        let load = self.dbs.update(ctx);
        let cur_khz = ctx.cur_khz();
        let max_khz = ctx.max_khz();
        let step = self.evaluate(load, cur_khz, max_khz, ctx.table_khz());
        if let Some((khz, relation)) = step.target {
            ctx.explain(&[
                ("load", load as f64),
                ("up_threshold", self.up_threshold as f64),
                ("cur_khz", cur_khz as f64),
                ("freq_next_khz", step.freq_next_khz as f64),
                ("rate_mult", self.dbs.rate_mult as f64),
                ("sampling_rate_us", self.dbs.sampling_rate_us as f64),
                ("powersave_bias", self.powersave_bias as f64),
                ("freq_lo_khz", self.split.map_or(0.0, |s| s.lo_khz as f64)),
            ]);
            ctx.request_khz(khz, relation);
        }
        step.delay_us
    }

    /// The decision for a load (od_update), on an ascending table whose ends are cpuinfo
    /// min/max.
    fn evaluate(&mut self, load: u32, cur_khz: u32, max_khz: u32, table: &[u32]) -> Step {
        self.split = None;
        let (target, freq_next_khz) = if load > self.up_threshold {
            // Busy: straight to the maximum, and stay there for sampling_down_factor periods.
            if cur_khz < max_khz {
                self.dbs.rate_mult = self.sampling_down_factor;
            }
            let target = if self.powersave_bias > 0 {
                let hi = self.bias_target(table, max_khz, Relation::H);
                Some((hi, Relation::L))
            } else if cur_khz == max_khz {
                None
            } else {
                Some((max_khz, Relation::H))
            };
            (target, max_khz)
        } else {
            // Otherwise in proportion to the load, over the hardware range.
            let top = if self.cpuinfo_max_khz > 0 { self.cpuinfo_max_khz } else { table[table.len() - 1] };
            let f = proportional_khz(load, table[0], top);
            self.dbs.rate_mult = 1;
            let target = if self.powersave_bias > 0 { self.bias_target(table, f, Relation::L) } else { f };
            (Some((target, Relation::C)), f)
        };
        let delay_us = match self.split {
            Some(split) => {
                self.sub_sample_due = true;
                split.hi_delay_us
            }
            None => self.dbs.sampling_rate_us * self.dbs.rate_mult,
        };
        Step { target, freq_next_khz, delay_us }
    }

    /// The entry to run first for a powersave_bias target; records the split if two entries
    /// alternate (generic_powersave_bias_target).
    fn bias_target(&mut self, table: &[u32], freq_next_khz: u32, relation: Relation) -> u32 {
        let (hi, split) = bias_split(table, freq_next_khz, relation, self.powersave_bias, self.dbs.sampling_rate_us);
        self.split = split;
        hi
    }
}

/// Frequency proportional to the load between the hardware limits (kHz):
/// `min + load · (max − min) / 100`, truncated.
fn proportional_khz(load: u32, cpuinfo_min_khz: u32, cpuinfo_max_khz: u32) -> u32 {
    let span = (cpuinfo_max_khz - cpuinfo_min_khz) as u64;
    cpuinfo_min_khz + (load as u64 * span / 100) as u32
}

/// The powersave_bias plan for `freq_next_khz` resolved with `relation`: the entry to run
/// first and, when the biased average falls between two entries, the split of one sampling
/// period between them.
fn bias_split(
    table: &[u32],
    freq_next_khz: u32,
    relation: Relation,
    bias_permille: u32,
    sampling_rate_us: u64,
) -> (u32, Option<BiasSplit>) {
    let req = table_lookup(table, freq_next_khz, relation) as u64;
    let avg = req - req * bias_permille as u64 / 1000;
    let lo = table_lookup(table, avg as u32, Relation::H) as u64;
    let hi = table_lookup(table, avg as u32, Relation::L) as u64;
    if lo == hi {
        return (lo as u32, None);
    }
    // Time at `hi` so that the period averages to `avg`, rounded to the nearest µs.
    let hi_delay_us = ((avg - lo) * sampling_rate_us + (hi - lo) / 2) / (hi - lo);
    let split = BiasSplit { lo_khz: lo as u32, hi_delay_us, lo_delay_us: sampling_rate_us - hi_delay_us };
    (hi as u32, Some(split))
}

impl Governor for Ondemand {
    fn start(&mut self, ctx: &mut dyn PolicyCtx) {
        let (vendor, cpuid) = ctx.cpu_identity();
        self.dbs.io_busy = self.io_is_busy.unwrap_or_else(|| should_io_be_busy(vendor, cpuid));
        self.cpuinfo_max_khz = ctx.cpuinfo_max_khz();
        if self.dbs.start(ctx) {
            self.split = None;
            self.sub_sample_due = false;
        }
    }

    fn wants_util_updates(&self) -> bool {
        true
    }

    fn util_update(&mut self, ctx: &mut dyn PolicyCtx, _cpu: usize, flags: UpdateFlags) {
        if !self.dbs.sample_due(ctx, flags) {
            return;
        }
        let delay_us = self.sample(ctx);
        self.dbs.set_sample_delay_us(delay_us);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// should_io_be_busy (cpufreq_ondemand.c): Intel family 6 from model 15 only; AMD never.
    #[test]
    fn io_is_busy_defaults_to_1_on_intel_core_2_and_later_only() {
        let id = |family, model| Some(CpuIdFile { family, model });
        assert!(should_io_be_busy(Vendor::Intel, id(6, 63)));
        assert!(should_io_be_busy(Vendor::Intel, id(6, 15)));
        assert!(!should_io_be_busy(Vendor::Intel, id(6, 14)));
        assert!(!should_io_be_busy(Vendor::Intel, id(15, 6)));
        assert!(!should_io_be_busy(Vendor::Amd, id(23, 49)));
        assert!(!should_io_be_busy(Vendor::Arm, None));
    }

    /// An OPP table of 0.8–3.0 GHz.
    const TABLE: &[u32] = &[800_000, 1_200_000, 1_600_000, 2_000_000, 2_400_000, 2_800_000, 3_000_000];
    const MAX: u32 = 3_000_000;

    fn od(up_threshold: u32, sampling_down_factor: u64, powersave_bias: u32) -> Ondemand {
        let mut g = Ondemand::new(10_000, up_threshold, sampling_down_factor, powersave_bias);
        g.dbs.sampling_rate_us = 10_000;
        g
    }

    #[test]
    fn load_85_picks_the_closest_entry_to_2_67_ghz() {
        // Worked example: 800 000 + 85 · 2 200 000 / 100 = 2 670 000 kHz -> 2.8 GHz (RELATION_C).
        assert_eq!(proportional_khz(85, 800_000, MAX), 2_670_000);
        let step = od(95, 1, 0).evaluate(85, 1_200_000, MAX, TABLE);
        assert_eq!(step.target, Some((2_670_000, Relation::C)));
        assert_eq!(table_lookup(TABLE, 2_670_000, Relation::C), 2_800_000);
        assert_eq!(step.delay_us, 10_000);
    }

    #[test]
    fn proportional_frequencies_are_table_driven() {
        // (load, raw kHz, resolved kHz)
        let cases = [
            (0, 800_000, 800_000),
            (18, 1_196_000, 1_200_000),
            (50, 1_900_000, 2_000_000),
            (54, 1_988_000, 2_000_000),
            (95, 2_890_000, 2_800_000),
            (100, 3_000_000, 3_000_000),
        ];
        for (load, raw, resolved) in cases {
            // up_threshold 100: even a full load stays proportional.
            let step = od(100, 1, 0).evaluate(load, 800_000, MAX, TABLE);
            assert_eq!(step.target, Some((raw, Relation::C)), "load {load}");
            assert_eq!(table_lookup(TABLE, raw, Relation::C), resolved, "load {load}");
        }
    }

    #[test]
    fn above_up_threshold_jumps_to_max_and_holds_for_sampling_down_factor() {
        let mut g = od(95, 4, 0);
        // Load 95 is not above the threshold: proportional, normal period.
        assert_eq!(g.evaluate(95, 1_200_000, MAX, TABLE).delay_us, 10_000);
        // Load 96 from 1.2 GHz: the maximum, and the next sample 4 periods later.
        let step = g.evaluate(96, 1_200_000, MAX, TABLE);
        assert_eq!(step.target, Some((MAX, Relation::H)));
        assert_eq!((step.delay_us, g.dbs.rate_mult), (40_000, 4));
        // Still busy at the maximum: no request, still the long period.
        let step = g.evaluate(100, MAX, MAX, TABLE);
        assert_eq!((step.target, step.delay_us), (None, 40_000));
        // The load drops: proportional again, and back to the normal period.
        let step = g.evaluate(40, MAX, MAX, TABLE);
        assert_eq!(step.target, Some((1_680_000, Relation::C)));
        assert_eq!((step.delay_us, g.dbs.rate_mult), (10_000, 1));
    }

    #[test]
    fn up_threshold_is_the_switch_point() {
        for (up, load, jumps) in [(80, 80, false), (80, 81, true), (11, 12, true), (100, 100, false)] {
            let step = od(up, 1, 0).evaluate(load, 800_000, MAX, TABLE);
            assert_eq!(step.target == Some((MAX, Relation::H)), jumps, "up_threshold {up}, load {load}");
        }
    }

    #[test]
    fn powersave_bias_alternates_the_entries_around_the_biased_target() {
        // Load 85 -> 2.67 GHz -> 2.8 GHz (RELATION_L); 10 % less is 2.52 GHz, between 2.4 and
        // 2.8 GHz: 2.8 GHz for (120 000 · 10 000 + 200 000) / 400 000 = 3000 µs, then 2.4 GHz.
        let (hi, split) = bias_split(TABLE, 2_670_000, Relation::L, 100, 10_000);
        assert_eq!(hi, 2_800_000);
        assert_eq!(split, Some(BiasSplit { lo_khz: 2_400_000, hi_delay_us: 3000, lo_delay_us: 7000 }));
        let mut g = od(95, 1, 100);
        let step = g.evaluate(85, 800_000, MAX, TABLE);
        assert_eq!((step.target, step.delay_us), (Some((2_800_000, Relation::C)), 3000));
        assert!(g.sub_sample_due);
        // A biased average on an entry needs no alternation.
        assert_eq!(bias_split(TABLE, 2_000_000, Relation::L, 200, 10_000), (1_600_000, None));
        // Busy with a bias: the maximum is biased too (2.7 GHz: 2.8 GHz for 7500 µs, then
        // 2.4 GHz), requested with RELATION_L even when already at the maximum.
        let step = od(95, 1, 100).evaluate(100, MAX, MAX, TABLE);
        assert_eq!((step.target, step.delay_us), (Some((2_800_000, Relation::L)), 7500));
    }
}
