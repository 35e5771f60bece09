//! performance: run every policy at its maximum.
//!
//! What it models: `cpufreq_performance`, which sets `policy->max` when it starts and whenever
//! the limits change, and does nothing else.
//! Differences from Linux: none. With a driver whose top table entry means "turbo allowed"
//! (acpi-cpufreq's P0), the hardware then runs the turbo bin for the number of active cores.
//! Tunables: none.
//! References: Documentation/admin-guide/pm/cpufreq.rst; drivers/cpufreq/cpufreq_performance.c.

use super::{Enables, Governor, GovernorInfo, PolicyCtx, Relation};
use crate::spec::KnobValues;

pub const INFO: GovernorInfo = GovernorInfo {
    name: "performance",
    description: "static: the policy's maximum frequency",
    knobs: &[],
    driver: None,
    check: super::no_cross_check,
    check_platform: super::runs_anywhere,
    build: |_: &KnobValues| Box::new(Performance),
    enables: Enables::NOTHING,
};

struct Performance;

impl Governor for Performance {
    fn start(&mut self, ctx: &mut dyn PolicyCtx) {
        let max = ctx.max_khz();
        ctx.request_khz(max, Relation::H);
    }
}
