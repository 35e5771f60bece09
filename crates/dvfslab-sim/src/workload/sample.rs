//! Distributions for building programs. A program has no random branch, so a distribution
//! other than uniform is built into the program's structure: `n` equally likely bins of the
//! distribution, each an [`Amount::Uniform`] whose mean is the bin's conditional mean, laid
//! out in a fixed shuffled order. Within a bin the simulation's seeded RNG draws at each run;
//! across bins the mix is exact by construction, so a short program already has the right
//! mean and shape.
//!
//! ```text
//!   bin i covers quantiles [i/n, (i+1)/n]:   lo_i = Q(i/n),  mean_i = n · ∫ Q(p) dp over the bin
//!   Amount::Uniform(lo_i, 2·mean_i − lo_i)   (same mean; the top bin stays finite)
//! ```

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_pcg::Pcg64;

use crate::sched::task::Amount;

/// Quantile points per bin for the bin means (midpoint rule).
const POINTS_PER_BIN: usize = 64;

/// `n` equally likely bins of the distribution with quantile function `q` (p in (0, 1)).
pub fn bins(n: usize, q: impl Fn(f64) -> f64) -> Vec<Amount> {
    let n = n.max(1);
    (0..n)
        .map(|i| {
            let lo = q(if i == 0 { 1e-9 } else { i as f64 / n as f64 });
            let mean = (0..POINTS_PER_BIN)
                .map(|j| q((i as f64 + (j as f64 + 0.5) / POINTS_PER_BIN as f64) / n as f64))
                .sum::<f64>()
                / POINTS_PER_BIN as f64;
            let lo = lo.max(0.0).min(mean);
            Amount::Uniform(lo, 2.0 * mean - lo)
        })
        .collect()
}

/// Bins of a lognormal with this median and log-space standard deviation.
pub fn lognormal(n: usize, median: f64, sigma_log: f64) -> Vec<Amount> {
    bins(n, |p| median * (sigma_log * normal_quantile(p)).exp())
}

/// Bins of an exponential with this mean (Poisson inter-arrival times).
pub fn exponential(n: usize, mean: f64) -> Vec<Amount> {
    bins(n, |p| -mean * (1.0 - p).ln())
}

/// Indices `0..len` mapped onto `n` bins in equal shares, in a fixed shuffled order: element `i`
/// of the result is the bin of the `i`-th item. `salt` picks the order, so two tasks built with
/// different salts do not run in lockstep.
pub fn layout(len: usize, n: usize, salt: u64) -> Vec<usize> {
    let mut v: Vec<usize> = (0..len).map(|i| i % n.max(1)).collect();
    v.shuffle(&mut Pcg64::seed_from_u64(0x5eed_0000 ^ salt));
    v
}

/// `len` booleans with `round(len · frac)` of them true, in a fixed shuffled order.
pub fn flags(len: usize, frac: f64, salt: u64) -> Vec<bool> {
    let k = (len as f64 * frac.clamp(0.0, 1.0)).round() as usize;
    let mut v: Vec<bool> = (0..len).map(|i| i < k).collect();
    v.shuffle(&mut Pcg64::seed_from_u64(0xf1a6_0000 ^ salt));
    v
}

/// The standard normal quantile Φ⁻¹(p), by P. J. Acklam's rational approximation (relative
/// error below 1.2e-9), for 0 < p < 1.
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.38357751867269e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] =
        [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
    const P_LOW: f64 = 0.02425;
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < P_LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - P_LOW {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// An amount scaled by `k`.
pub fn scaled(a: Amount, k: f64) -> Amount {
    match a {
        Amount::Fixed(v) => Amount::Fixed(v * k),
        Amount::Uniform(lo, hi) => Amount::Uniform(lo * k, hi * k),
        Amount::Exponential(mean) => Amount::Exponential(mean * k),
        Amount::Measured(q, m) => Amount::Measured(q, m * k),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_quantile_matches_known_points() {
        for (p, z) in [(0.5, 0.0), (0.975, 1.959964), (0.001, -3.090232), (0.8413447, 1.0)] {
            assert!((normal_quantile(p) - z).abs() < 1e-5, "{p}: {}", normal_quantile(p));
        }
    }

    #[test]
    fn bins_keep_the_mean_of_the_distribution() {
        // Lognormal mean = median · exp(σ²/2); exponential mean = mean.
        let ln: f64 = lognormal(16, 1.0, 0.9).into_iter().map(Amount::mean).sum::<f64>() / 16.0;
        assert!((ln - (0.405f64).exp()).abs() < 0.02, "{ln}");
        let ex: f64 = exponential(32, 2.0).into_iter().map(Amount::mean).sum::<f64>() / 32.0;
        assert!((ex - 2.0).abs() < 0.03, "{ex}");
        for a in lognormal(16, 1.0, 1.0) {
            let Amount::Uniform(lo, hi) = a else { panic!() };
            assert!(lo >= 0.0 && hi >= lo, "{lo} {hi}");
        }
    }

    #[test]
    fn layout_and_flags_are_balanced_and_fixed() {
        let l = layout(64, 16, 1);
        assert_eq!(l, layout(64, 16, 1));
        assert_ne!(l, layout(64, 16, 2));
        for b in 0..16 {
            assert_eq!(l.iter().filter(|&&x| x == b).count(), 4);
        }
        assert_eq!(flags(100, 0.05, 3).iter().filter(|&&f| f).count(), 5);
    }
}
