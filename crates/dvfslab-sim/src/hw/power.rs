//! The power model, each formula written once: what a core draws busy, idle or gated, and what
//! a package's uncore draws. The running simulation (`hw/mod.rs`) and the turbo limits a preset
//! derives at load (`platform.rs`) both call these.
//!
//! ```text
//!   core, n threads issuing   P = a·g(n) · C_eff · V² · f  +  P_leak_ref · (V / V_ref)³
//!                             g(n) = 1 + (gain − 1) · (n − 1) / (threads per core − 1)
//!   core, idle                clock-gated: leakage at V; low-voltage: leakage at the V of
//!                             f_min; power-gated: 0
//!   uncore                    package idle: P_pkg_idle;  else P_uncore + P_uncore_dyn · level
//! ```
//! `a` is the cluster's typical activity, `level` the uncore clock's place in its range
//! (0..1), following the fastest core not power-gated.
//!
//! A new term (say a temperature-dependent leakage) is a field in the preset's `power` or
//! `package_power` block, read here and nowhere else.

use super::platform::{ClusterFile, CorePowerFile, IdlePower, PackagePowerFile};

impl CorePowerFile {
    /// Switching power (W) at `khz` and `mv` with `activity`: activity · C_eff · V² · f.
    pub fn dynamic_w(&self, khz: u32, mv: f64, activity: f64) -> f64 {
        let v = mv / 1000.0;
        activity * self.c_eff_nf * 1e-9 * v * v * (khz as f64 * 1e3)
    }

    /// Leakage (W) of one powered core at voltage `mv`: `p_leak_ref · (V/v_ref)³`.
    pub fn leak_w(&self, mv: f64) -> f64 {
        self.p_leak_ref_mw / 1000.0 * (mv / self.v_ref_mv).powi(3)
    }

    /// Busy power (W) of one core at `khz` and `mv` with `activity`: switching plus leakage.
    pub fn busy_w(&self, khz: u32, mv: f64, activity: f64) -> f64 {
        self.dynamic_w(khz, mv, activity) + self.leak_w(mv)
    }
}

impl PackagePowerFile {
    /// The uncore's power (W): the package-idle power while the package idles (`None`), else
    /// the static power plus the share that follows the uncore clock's `level` (0..1).
    pub fn uncore_w(&self, level: Option<f64>) -> f64 {
        level.map_or(self.p_pkg_idle_w, |level| self.p_uncore_active_w + self.p_uncore_dyn_w * level)
    }

    /// The activity factor of a core with `issuing` threads issuing instructions out of
    /// `threads_per_core`: each thread past the first adds its share of `smt_activity_gain`.
    pub fn smt_gain(&self, threads_per_core: u32, issuing: u32) -> f64 {
        let tpc = threads_per_core as f64;
        if tpc > 1.0 {
            1.0 + (self.smt_activity_gain - 1.0) * (issuing as f64 - 1.0) / (tpc - 1.0)
        } else {
            1.0
        }
    }
}

/// What a core is doing, as far as its power goes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CoreLoad {
    /// Threads running a task.
    pub busy_threads: u32,
    /// With no thread busy, the shallowest idle state's power among its threads (None: a thread
    /// is between states, waking).
    pub idle: Option<IdlePower>,
    pub khz: u32,
    pub mv: f64,
}

/// Power of a core (W) of `cluster` under `load`. A polling thread keeps the core clocked and
/// issuing (a pause loop) [EST: as one busy thread]. `min_mv` gives the voltage of the
/// cluster's lowest frequency, asked only for a low-voltage idle state.
pub fn core_w(
    cluster: &ClusterFile,
    package: &PackagePowerFile,
    threads_per_core: u32,
    load: CoreLoad,
    min_mv: impl FnOnce() -> f64,
) -> f64 {
    let issuing = if load.busy_threads == 0 && load.idle == Some(IdlePower::Polling) { 1 } else { load.busy_threads };
    if issuing > 0 {
        let gain = package.smt_gain(threads_per_core, issuing);
        return cluster.power.busy_w(load.khz, load.mv, cluster.power.activity * gain);
    }
    match load.idle {
        // None: no thread is in an idle state (one is waking); Polling returned above.
        None | Some(IdlePower::Polling) | Some(IdlePower::ClockGated) => cluster.power.leak_w(load.mv),
        Some(IdlePower::LowVoltage) => cluster.power.leak_w(min_mv()),
        Some(IdlePower::PowerGated) => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skylake() -> crate::hw::platform::Platform {
        crate::hw::platform::test_preset("skylake-e3-1240v5")
    }

    /// Busy power is C·V²·f scaled by activity plus leakage; leakage grows with V³.
    #[test]
    fn busy_power_is_switching_plus_leakage() {
        let p = CorePowerFile { c_eff_nf: 2.0, v_ref_mv: 1000.0, p_leak_ref_mw: 500.0, activity: 0.5 };
        // 0.5 · 2 nF · (1 V)² · 1 GHz = 1 W, plus 0.5 W of leakage at the reference voltage.
        assert!((p.busy_w(1_000_000, 1000.0, 0.5) - 1.5).abs() < 1e-12);
        assert!((p.leak_w(2000.0) - 4.0).abs() < 1e-12);
        assert!((p.dynamic_w(2_000_000, 500.0, 1.0) - 1.0).abs() < 1e-12);
    }

    /// A second busy SMT thread adds the preset's gain; an idle core draws by its C-state.
    #[test]
    fn a_core_draws_by_its_threads_and_its_idle_state() {
        let plat = skylake();
        let cl = plat.cluster(0);
        let pp = &plat.file.package_power;
        let tpc = plat.file.topology.threads_per_core;
        let (khz, mv) = (cl.frequency.base_khz, plat.voltage_mv(0, cl.frequency.base_khz));
        let load = |busy_threads, idle| CoreLoad { busy_threads, idle, khz, mv };
        let low = plat.voltage_mv(0, cl.frequency.min_khz);
        let one = core_w(cl, pp, tpc, load(1, None), || low);
        let two = core_w(cl, pp, tpc, load(2, None), || low);
        let dynamic = cl.power.dynamic_w(khz, mv, cl.power.activity);
        assert!((two - one - dynamic * (pp.smt_activity_gain - 1.0)).abs() < 1e-9);
        // Polling counts as one busy thread; a gated core leaks; a power-gated one draws nothing.
        assert_eq!(core_w(cl, pp, tpc, load(0, Some(IdlePower::Polling)), || low), one);
        assert_eq!(core_w(cl, pp, tpc, load(0, Some(IdlePower::ClockGated)), || low), cl.power.leak_w(mv));
        assert_eq!(core_w(cl, pp, tpc, load(0, Some(IdlePower::LowVoltage)), || low), cl.power.leak_w(low));
        assert_eq!(core_w(cl, pp, tpc, load(0, Some(IdlePower::PowerGated)), || panic!("not asked")), 0.0);
    }

    #[test]
    fn the_uncore_draws_its_idle_power_or_follows_its_clock() {
        let plat = skylake();
        let pp = &plat.file.package_power;
        assert_eq!(pp.uncore_w(None), pp.p_pkg_idle_w);
        assert_eq!(pp.uncore_w(Some(0.0)), pp.p_uncore_active_w);
        assert_eq!(pp.uncore_w(Some(1.0)), pp.p_uncore_active_w + pp.p_uncore_dyn_w);
    }
}
