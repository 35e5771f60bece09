//! intel_pstate's legacy PID controller: the Core "powersave" policy of Linux 3.9 … ≈4.14.
//!
//! Part of the `intel_pstate` governor (`algorithm=1`); its doc header, tunables and
//! differences from Linux are in intel_pstate.rs. The controller does not look at
//! utilisation: it compares the performance the core delivered while in C0 with the P-state
//! it requested, and steps the request until the two stand at `setpoint` percent.
//!
//! ```text
//!   core_busy = 100 · (Δaperf/Δmperf) · max_pstate_physical / current_pstate    [% of the request delivered]
//!             · sample_rate / duration     if duration > 3 · sample_rate   (the CPU idled between samples)
//!             = 0                          elif Δmperf/Δtsc < 1 %           (almost never in C0)
//!   err       = setpoint − core_busy
//!   out       = p_gain·err + i_gain·Σerr + d_gain·(err − err_prev),  |Σerr| ≤ 30, rounded half up
//!   target    = current_pstate − out
//! ```
//! Everything is 8-bit fixed point except Δaperf/Δmperf (14 bits), so a step happens only once
//! the rounded output reaches one whole P-state. Mirrors `get_target_pstate_use_performance`
//! and `pid_calc` (4.11).

use super::intel_pstate::{div_fp, fp_toint, int_tofp, mul_ext_fp, mul_fp, Sample, FRAC_BITS};

/// Bound of the integral term (fixed point), as in the driver.
const INTEGRAL_LIMIT_FP: i64 = int_tofp(30);

/// The debugfs `pstate_snb` parameters (integers, percent).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PidParams {
    pub setpoint: i64,
    pub p_gain_pct: i64,
    pub i_gain_pct: i64,
    pub d_gain_pct: i64,
    pub deadband: i64,
}

/// Controller state, all in 8-bit fixed point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Pid {
    setpoint: i64,
    deadband: i64,
    p_gain: i64,
    i_gain: i64,
    d_gain: i64,
    integral: i64,
    last_err: i64,
}

/// One step of the controller: its terms (fixed point) and the output in whole P-states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PidTerms {
    pub err: i64,
    pub p: i64,
    pub i: i64,
    pub d: i64,
    pub out: i64,
}

impl Pid {
    /// A reset controller (`intel_pstate_pid_reset`): no integral, and a previous error as if
    /// the core had delivered 100 %.
    pub fn new(params: &PidParams) -> Pid {
        let gain = |pct: i64| div_fp(pct, 100);
        let setpoint = int_tofp(params.setpoint);
        Pid {
            setpoint,
            deadband: int_tofp(params.deadband),
            p_gain: gain(params.p_gain_pct),
            i_gain: gain(params.i_gain_pct),
            d_gain: gain(params.d_gain_pct),
            integral: 0,
            last_err: setpoint - int_tofp(100),
        }
    }

    /// The controller's response to `busy` (fixed-point percent).
    pub fn calc(&mut self, busy: i64) -> PidTerms {
        let err = self.setpoint - busy;
        if err.abs() <= self.deadband {
            // Close enough: no change, and no state update either.
            return PidTerms { err, p: 0, i: 0, d: 0, out: 0 };
        }
        let p = mul_fp(self.p_gain, err);
        self.integral = (self.integral + err).clamp(-INTEGRAL_LIMIT_FP, INTEGRAL_LIMIT_FP);
        let i = mul_fp(self.integral, self.i_gain);
        let d = mul_fp(self.d_gain, err - self.last_err);
        self.last_err = err;
        // Add one half and drop the fraction: rounds half up, towards +inf.
        let out = fp_toint(p + i + d + (1 << (FRAC_BITS - 1)));
        PidTerms { err, p, i, d, out }
    }
}

/// The PID's input: delivered over requested performance, in fixed-point percent.
pub(super) fn perf_scaled(s: &Sample, max_physical: i64, current_pstate: i64, sample_rate_ns: u64) -> i64 {
    let per_ratio = div_fp(100 * max_physical, current_pstate.max(1));
    let perf = mul_ext_fp(s.core_avg_perf(), per_ratio as u64) as i64;
    if s.duration_ns > 3 * sample_rate_ns {
        // Idle between samples: scale down by the share of the interval covered.
        mul_fp(perf, div_fp(sample_rate_ns as i64, s.duration_ns as i64))
    } else if div_fp(100 * s.mperf as i64, s.tsc.max(1) as i64) < int_tofp(1) {
        // Under 1 % in C0: count as not busy at all.
        0
    } else {
        perf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CORE: PidParams = PidParams { setpoint: 97, p_gain_pct: 20, i_gain_pct: 0, d_gain_pct: 0, deadband: 0 };
    const RATE_NS: u64 = 10_000_000;

    fn busy_sample(aperf: u64, mperf: u64) -> Sample {
        Sample { aperf, mperf, tsc: mperf, duration_ns: RATE_NS }
    }

    /// One PID step from `current` with max_pstate_physical 24: (core_busy, out, target).
    fn step(pid: &mut Pid, s: &Sample, current: i64) -> (i64, i64, i64) {
        let busy = perf_scaled(s, 24, current, RATE_NS);
        let out = pid.calc(busy).out;
        (busy, out, current - out)
    }

    #[test]
    fn spec_example_fully_busy_and_delivered_steps_up_one() {
        // pid_calc: current 20, max_physical 24, Δa/Δm = 20/24 → 100 % → err −3 → 21.
        let mut pid = Pid::new(&CORE);
        let (busy, out, target) = step(&mut pid, &busy_sample(20_000, 24_000), 20);
        assert_eq!(fp_toint(busy + 128), 100);
        assert_eq!(out, -1);
        assert_eq!(target, 21);
    }

    #[test]
    fn spec_example_over_delivery_jumps_five() {
        // Turbo delivers Δa/Δm = 1.0 at a request of 20: 120 % → err −23 → −4.6 + 0.5 → −5 → 25.
        let mut pid = Pid::new(&CORE);
        let (busy, out, target) = step(&mut pid, &busy_sample(24_000, 24_000), 20);
        assert_eq!(busy, int_tofp(120));
        assert_eq!(pid.calc(busy).err, int_tofp(-23));
        assert_eq!(out, -5);
        assert_eq!(target, 25);
    }

    #[test]
    fn under_delivery_steps_down() {
        // Requested 38, delivered 35 (the 4-core bin): 92 % → err +5 → +1.0 + 0.5 → 1 → 37.
        let mut pid = Pid::new(&CORE);
        let s = busy_sample(35_000, 34_000);
        let busy = perf_scaled(&s, 34, 38, RATE_NS);
        assert_eq!(fp_toint(busy), 92);
        assert_eq!(38 - pid.calc(busy).out, 37);
    }

    #[test]
    fn idle_time_scales_the_measurement_down() {
        let mut s = busy_sample(20_000, 24_000);
        // 40 ms since the last sample, over 3 × 10 ms: 100 % · 10/40 = 25 % (fixed-point floors).
        s.duration_ns = 40_000_000;
        assert_eq!(fp_toint(perf_scaled(&s, 24, 20, RATE_NS)), 24);
        // 30 ms is not over 3 × 10 ms, but 0.5 % in C0 counts as idle.
        let quiet = Sample { aperf: 50, mperf: 60, tsc: 12_000, duration_ns: 30_000_000 };
        assert_eq!(perf_scaled(&quiet, 24, 20, RATE_NS), 0);
        // Idle: err 97 → 19.4 + 0.5 → 19 P-states down.
        assert_eq!(Pid::new(&CORE).calc(0).out, 19);
    }

    #[test]
    fn deadband_integral_and_derivative() {
        let mut pid = Pid::new(&PidParams { deadband: 3, ..CORE });
        assert_eq!(pid.calc(int_tofp(100)).out, 0); // |err| = 3 ≤ deadband
        let mut pid = Pid::new(&PidParams { p_gain_pct: 0, i_gain_pct: 10, ..CORE });
        for _ in 0..10 {
            pid.calc(int_tofp(87)); // err +10 each time; the integral stops at 30
        }
        let t = pid.calc(int_tofp(87));
        assert_eq!(t.i, mul_fp(int_tofp(30), div_fp(10, 100)));
        assert_eq!(t.out, 3);
        // The derivative starts from the reset error setpoint − 100 = −3.
        let mut pid = Pid::new(&PidParams { p_gain_pct: 0, d_gain_pct: 100, ..CORE });
        let t = pid.calc(int_tofp(96)); // err +1, previous −3: d = 1.0 · 4
        assert_eq!(t.d, mul_fp(div_fp(100, 100), int_tofp(4)));
        assert_eq!(t.out, 4);
    }
}
