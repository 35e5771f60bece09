//! userspace: the frequency a user wrote to `scaling_setspeed`.
//!
//! What it models: `cpufreq_userspace`. The requested speed is kept even when the limits
//! exclude it, so widening the limits later restores it; the driver resolves it to the lowest
//! table entry at or above it (RELATION_L).
//! Differences from Linux: the speed is set once, from the spec string, before the run starts;
//! 0 (the default) keeps the frequency the policy had, which here is its maximum.
//! Tunables: `scaling_setspeed` (kHz, default 0 = leave as is).
//! References: drivers/cpufreq/cpufreq_userspace.c; Documentation/admin-guide/pm/cpufreq.rst.

use super::{Enables, Governor, GovernorInfo, PolicyCtx, Relation};
use crate::spec::{Knob, KnobValues};

pub const INFO: GovernorInfo = GovernorInfo {
    name: "userspace",
    description: "static: the frequency given as scaling_setspeed",
    knobs: &[Knob::new(
        "scaling_setspeed",
        "kHz",
        0.0,
        0.0,
        10_000_000.0,
        "requested frequency; 0 keeps the current one",
    )
    .integer()],
    driver: None,
    check: super::no_cross_check,
    check_platform: super::runs_anywhere,
    build: |k: &KnobValues| Box::new(Userspace { setspeed_khz: k.get_u64("scaling_setspeed") as u32 }),
    enables: Enables::NOTHING,
};

struct Userspace {
    setspeed_khz: u32,
}

impl Governor for Userspace {
    fn start(&mut self, ctx: &mut dyn PolicyCtx) {
        if self.setspeed_khz == 0 {
            self.setspeed_khz = ctx.max_khz();
        }
        // Outside the limits the nearest limit wins, but the wish itself is kept.
        let (min, max) = (ctx.min_khz(), ctx.max_khz());
        if self.setspeed_khz > max {
            ctx.request_khz(max, Relation::H);
        } else if self.setspeed_khz < min {
            ctx.request_khz(min, Relation::L);
        } else {
            ctx.request_khz(self.setspeed_khz, Relation::L);
        }
    }
}
