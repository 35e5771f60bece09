//! powersave: run every policy at its minimum.
//!
//! What it models: `cpufreq_powersave`, which sets `policy->min` when it starts and whenever
//! the limits change.
//! Differences from Linux: none. (intel_pstate's *active* "powersave" is a driver policy, not
//! this governor; it comes with the intel_pstate model.)
//! Tunables: none.
//! References: Documentation/admin-guide/pm/cpufreq.rst; drivers/cpufreq/cpufreq_powersave.c.

use super::{Enables, Governor, GovernorInfo, PolicyCtx, Relation};
use crate::spec::KnobValues;

pub const INFO: GovernorInfo = GovernorInfo {
    name: "powersave",
    description: "static: the policy's minimum frequency",
    knobs: &[],
    driver: None,
    check: super::no_cross_check,
    check_platform: super::runs_anywhere,
    build: |_: &KnobValues| Box::new(Powersave),
    enables: Enables::NOTHING,
};

struct Powersave;

impl Governor for Powersave {
    fn start(&mut self, ctx: &mut dyn PolicyCtx) {
        let min = ctx.min_khz();
        ctx.request_khz(min, Relation::L);
    }
}
