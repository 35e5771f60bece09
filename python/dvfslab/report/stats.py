"""The statistics of a comparison, computed the way MMTests computes them.

Every function here is pure: plain numbers in, plain numbers out. The MMTests rules (which mean,
which spread, the sign of the percentage, when a difference is starred) are re-derived from the
description of MMTests @638401e0 (Stat.pm, Compare.pm, subselection-confidence-interval.py).
Where the lab adds something MMTests does not have (a ratio's interval over the model variants,
performance per watt, a verdict), the docstring says so.

Directions: `better` is "higher" (throughput: MB/s, ops/s) or "lower" (time, latency). A higher
metric is summarised by its harmonic mean, a lower one by its arithmetic mean (`mean_kind`).
NaN samples are skipped, as MMTests skips undefined values.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, Callable, Literal, get_args

from dvfslab._core import ConfigError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Rows = Callable[[NDArray[np.float64]], NDArray[np.float64]]

Better = Literal["higher", "lower"]
Verdict = Literal["improved", "regressed", "neutral", "uncertain"]

CONFIDENCE = 0.95
"""The confidence of the MMTests intervals here (MMTests' alpha = 0.05)."""
INTERVAL_LEVEL = 0.90
"""The level of a ratio's interval over the model variants."""
NEUTRAL_BAND = 0.02
"""A ratio within 1 +- this is neutral: the published evaluations print `~` for about +-2%."""
FLOAT_NOISE = 1e-12
"""A spread below this share of the values is rounding, not a spread."""
TTEST_LEVEL = 0.10
"""p-value below which the pre-2024 MMTests t-test called a difference significant."""
SUBSELECTION_RESAMPLES = 1000
SUBSELECTION_FRACTION = 0.8
GMEAN_ZERO_RATIO = 0.00001
"""What a zero ratio counts as in a Gmean (MMTests), so one zero does not zero the score."""


# -- means and spreads -------------------------------------------------------------------------


def amean(xs: Iterable[float]) -> float:
    """Arithmetic mean, sum(x) / n (MMTests calc_amean). NaN when there are no samples."""
    v = _values(xs)
    return math.fsum(v) / len(v) if v else math.nan


def hmean(xs: Iterable[float]) -> float:
    """Harmonic mean, n / sum(1/x) (MMTests calc_hmean). NaN if any x <= 0 or no samples."""
    v = _values(xs)
    if not v or any(x <= 0 for x in v):
        return math.nan
    return len(v) / math.fsum(1.0 / x for x in v)


def gmean(xs: Iterable[float]) -> float:
    """Geometric mean, (prod x) ** (1/n) (MMTests calc_geomean), summed in logs.

    0 if any x is 0; NaN if any x < 0 or no samples.
    """
    v = _values(xs)
    if not v or any(x < 0 for x in v):
        return math.nan
    if any(x == 0 for x in v):
        return 0.0
    return math.exp(math.fsum(math.log(x) for x in v) / len(v))


def stddev(xs: Iterable[float]) -> float:
    """Sample standard deviation around the arithmetic mean (MMTests calc_stddev "amean").

        s = sqrt( sum (x_i - A)^2 / (n - 1) )

    NaN for fewer than two samples.
    """
    v = _values(xs)
    if len(v) < 2:
        return math.nan
    a = math.fsum(v) / len(v)
    return math.sqrt(math.fsum((x - a) ** 2 for x in v) / (len(v) - 1))


def hstddev(xs: Iterable[float]) -> float:
    """Spread of the harmonic mean (MMTests calc_stddev "hmean", since 2024-11-28).

        HStddev = H^2 * sqrt( sum (1/x_i - 1/H)^2 / n )

    The delta-method standard deviation of H when 1/X is normal: the population spread of the
    reciprocals mapped back through x -> 1/x. NaN wherever hmean is NaN; 0 for one sample.
    """
    v = _values(xs)
    h = hmean(v)
    if math.isnan(h):
        return math.nan
    return h * h * math.sqrt(math.fsum((1.0 / x - 1.0 / h) ** 2 for x in v) / len(v))


def mean_kind(better: str) -> Literal["hmean", "amean"]:
    """The mean MMTests summarises a metric with: Hmean for higher-is-better, else Amean."""
    return "hmean" if _direction(better) == "higher" else "amean"


def mean_for(xs: Iterable[float], better: str) -> float:
    """hmean(xs) for a higher-is-better metric, amean(xs) for a lower-is-better one."""
    return hmean(xs) if mean_kind(better) == "hmean" else amean(xs)


def stddev_for(xs: Iterable[float], better: str) -> float:
    """The spread MMTests prints beside that mean: HStddev for Hmean rows, Stddev for Amean."""
    return hstddev(xs) if mean_kind(better) == "hmean" else stddev(xs)


def coeff_var(xs: Iterable[float], better: str = "lower") -> float:
    """Coefficient of variation in percent, 100 * sd / mean (MMTests calc_coeffvar).

    mean and sd as `better` selects (Hmean and HStddev, or Amean and Stddev); 0 if the mean is 0.
    This is also the "+- x%" of SUSE changelog tables.
    """
    v = _values(xs)
    m, sd = mean_for(v, better), stddev_for(v, better)
    if m == 0:
        return 0.0
    return 100.0 * sd / m


def best_first(xs: Iterable[float], better: str) -> list[float]:
    """The samples sorted best first, as MMTests sorts before any statistic."""
    return sorted(_values(xs), reverse=_direction(better) == "higher")


def best_mean(xs: Iterable[float], better: str, pct: float = 95) -> float:
    """BHmean-p / BAmean-p: the mean of the best max(1, int(n * p / 100)) samples."""
    v = best_first(xs, better)
    return mean_for(v[: max(1, int(len(v) * pct / 100))], better) if v else math.nan


def pct_value(xs: Iterable[float], better: str, pct: float = 95) -> float:
    """Pct.p: x[count - 1] with count = max(1, int(n * p / 100)) in best-first order.

    For a lower-is-better metric the usual p-th percentile; for a higher one the value that p%
    of the samples are at least.
    """
    v = best_first(xs, better)
    return v[max(1, int(len(v) * pct / 100)) - 1] if v else math.nan


@dataclass(frozen=True)
class Summary:
    """One operation's row statistics (MMTests Multiops): `kind` names the mean."""

    kind: Literal["hmean", "amean"]
    n: int
    mean: float
    stddev: float
    coeffvar: float
    min: float
    max: float

    @property
    def ci(self) -> tuple[float, float]:
        """MMTests meanci: mean +- z * sd with z = 1.96 (not divided by sqrt(n): a band of the
        samples, not a confidence interval of the mean)."""
        half = _z(CONFIDENCE) * self.stddev
        return (self.mean - half, self.mean + half)


def summarise(xs: Iterable[float], better: str) -> Summary:
    """The statistics MMTests prints for one operation (MMTests' Compare.pm summary)."""
    v = _values(xs)
    return Summary(
        kind=mean_kind(better),
        n=len(v),
        mean=mean_for(v, better),
        stddev=stddev_for(v, better),
        coeffvar=coeff_var(v, better),
        min=min(v) if v else math.nan,
        max=max(v) if v else math.nan,
    )


# -- the percentage column ---------------------------------------------------------------------


def pct_diff(base: float, new: float, better: str) -> float:
    """MMTests' percentage column: positive always means `new` is better than `base`.

        higher is better (pdiff):   new * 100 / base - 100
                                    (0 if equal or new = 0; 100 if base = 0)
        lower is better (pndiff):   100 - new * 100 / base
                                    (0 if equal; 100 if new = 0; -99 if base = 0)

    The special cases are MMTests'. Spread rows (Stddev, CoeffVar) are compared as lower is
    better whatever the metric: a smaller spread is an improvement. NaN if either is NaN.
    """
    if math.isnan(base) or math.isnan(new):
        return math.nan
    if _direction(better) == "higher":
        if new == base or new == 0:
            return 0.0
        if base == 0:
            return 100.0
        return new * 100.0 / base - 100.0
    if new == base:
        return 0.0
    if new == 0:
        return 100.0
    if base == 0:
        return -99.0
    return 100.0 - new * 100.0 / base


# -- significance ------------------------------------------------------------------------------


def cidiff(
    new: float, new_ci: tuple[float, float], base: float, base_ci: tuple[float, float]
) -> float:
    """How far apart two means are, in units of their interval half-widths (MMTests cidiff).

        diff  = new - base
        cisum = (new < base) ? (new_hi - new) + (base - base_lo)
                             : (new - new_lo) + (base_hi - base)
        cidiff = diff / cisum          (diff itself when cisum = 0, as in Stat.pm)

    |cidiff| > 1 iff the intervals do not overlap. The sign is the raw difference's, not the
    improvement's.
    """
    diff = new - base
    if new < base:
        cisum = (new_ci[1] - new) + (base - base_ci[0])
    else:
        cisum = (new - new_ci[0]) + (base_ci[1] - base)
    return diff / cisum if cisum != 0 else diff


SignificanceMethod = Literal["ci", "ttest"]
"""How a detail row's difference is judged (`significance`)."""
SIGNIFICANCE_METHODS: tuple[SignificanceMethod, ...] = get_args(SignificanceMethod)


@dataclass(frozen=True)
class Significance:
    """Whether a difference of means is marked `*x%*` in an MMTests table, and why.

    score is the cidiff ratio for method "ci", the two-sided p-value for "ttest".
    """

    significant: bool
    score: float
    method: SignificanceMethod


def significance(
    base_samples: Iterable[float],
    new_samples: Iterable[float],
    better: str,
    method: SignificanceMethod = "ci",
    level: float = TTEST_LEVEL,
) -> Significance:
    """Is `new` significantly different from `base`? The rule MMTests stars a mean row by.

    method "ci" (MMTests since 2024-11-28, commit 8cd087ae): each side's comparison mean V with
    its band V +- 1.96 * sd (HStddev for Hmean, Stddev for Amean); significant iff the bands do
    not overlap, |cidiff| > 1. Two zero-width bands are apart iff the means differ (Stat.pm
    would compare the raw difference with 1 there). An undefined sd (one Amean sample) is never
    significant.

    method "ttest" (MMTests before 2024-11-28): Student's two-sample t on the comparison means
    with the amean-based sample sd on both sides,
        t = |m_b - m_n| / sqrt(s_b^2/n_b + s_n^2/n_n),  df = n_b + n_n - 2,
    significant iff the two-sided p < `level` (0.10). Needs two samples a side.
    """
    base, new = _values(base_samples), _values(new_samples)
    if method == "ttest":
        p = ttest_p(base, new, better)
        return Significance(p < level, p, "ttest")
    if method != "ci":
        methods = " or ".join(repr(m) for m in SIGNIFICANCE_METHODS)
        raise ConfigError(f"significance method must be {methods} (got {method!r})")
    b, n = summarise(base, better), summarise(new, better)
    if any(math.isnan(x) for x in (b.mean, b.stddev, n.mean, n.stddev)):
        return Significance(False, math.nan, "ci")
    ratio = cidiff(n.mean, n.ci, b.mean, b.ci)
    apart = abs(ratio) > 1 if (b.stddev + n.stddev) > 0 else n.mean != b.mean
    return Significance(apart, ratio, "ci")


def ttest_p(base: Sequence[float], new: Sequence[float], better: str) -> float:
    """Two-sided p-value of the pre-2024 MMTests t-test (see `significance`); NaN if undefined."""
    base, new = _values(base), _values(new)
    if len(base) < 2 or len(new) < 2:
        return math.nan
    mb, mn = mean_for(base, better), mean_for(new, better)
    stderr = math.sqrt(stddev(base) ** 2 / len(base) + stddev(new) ** 2 / len(new))
    if stderr == 0:
        return 0.0 if mb != mn else 1.0
    return student_t_sf2(abs(mb - mn) / stderr, len(base) + len(new) - 2)


def student_t_sf2(t: float, df: float) -> float:
    """Two-sided tail of Student's t: P(|T| >= t) = 2 * P(T <= -|t|).

    scipy.special.stdtr is the t distribution's CDF, what scipy.stats.t.sf calls, without the
    import time of scipy.stats.
    """
    from scipy.special import stdtr

    if df <= 0 or math.isnan(t):
        return math.nan
    return 2.0 * float(stdtr(df, -abs(t)))


def student_t_quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = p for Student's t with `df` degrees of freedom (p in (0.5, 1)).

    scipy.special.stdtrit, the inverse of stdtr (what scipy.stats.t.ppf calls); the normal
    quantile when df is infinite.
    """
    from scipy.special import stdtrit

    if not 0.5 < p < 1:
        raise ConfigError(f"quantile probability must be in (0.5, 1) (got {p})")
    if math.isinf(df):
        return _z(2 * p - 1)
    return float(stdtrit(df, p))


# -- SubAmean: the subselection bootstrap ------------------------------------------------------


@dataclass(frozen=True)
class SubMean:
    """SubAmean/SubHmean and its 95% half-width (SubAmeanCI); the interval is value +- ci_half."""

    value: float
    ci_half: float

    @property
    def ci(self) -> tuple[float, float]:
        return (self.value - self.ci_half, self.value + self.ci_half)


def sub_mean(
    iterations: Sequence[Sequence[float]],
    mean: Literal["amean", "hmean", "gmean"] = "amean",
    *,
    seed: int = 0,
    resamples: int = SUBSELECTION_RESAMPLES,
    confidence: float = CONFIDENCE,
) -> SubMean:
    """Kalibera, Bulej and Tuma's subselection bootstrap, as MMTests' dbench4 reports used it.

    For each iteration j (its own sample list x_j), with len_j = max(1, int(0.8 * |x_j|)):
        med_j = median over 1000 draws of f(len_j samples of x_j, with replacement)
        v_j   = median over 1000 other draws of their population variance (ddof 0)
    then
        m     = mean_j med_j                                    -> SubAmean (f = amean)
        svar  = mean_j v_j                                      within-iteration variance
        smean = sum_j (med_j - m)^2 * len_j / (J - 1)           between-iteration (0 if J = 1)
        half  = z_{1-alpha/2} * sqrt((smean + svar) / sum_j len_j)   -> SubAmeanCI
    MMTests draws from an unseeded generator; here `seed` makes the result reproducible.
    The max(1, ...) keeps one-sample iterations usable (MMTests would take none).
    scipy.stats.bootstrap gives a percentile or BCa interval of one statistic, not these
    medians of resampled means and variances, so the draws are numpy's here.
    """
    import numpy as np

    groups = [np.asarray(_values(x), dtype=float) for x in iterations]
    groups = [g for g in groups if g.size]
    if not groups:
        return SubMean(math.nan, math.nan)
    f: Rows | None = {"amean": _np_amean, "hmean": _np_hmean, "gmean": _np_gmean}.get(mean)
    if f is None:
        raise ConfigError(f"sub_mean mean must be amean, hmean or gmean (got {mean!r})")
    rng = np.random.default_rng(seed)
    meds, variances, lens = [], [], []
    for g in groups:
        size = max(1, int(SUBSELECTION_FRACTION * g.size))
        meds.append(float(np.median(_resampled(rng, g, size, resamples, f))))
        variances.append(float(np.median(_resampled(rng, g, size, resamples, _np_pvar))))
        lens.append(size)
    m = float(np.mean(meds))
    svar = float(np.mean(variances))
    j = len(groups)
    smean = sum((med - m) ** 2 * n for med, n in zip(meds, lens)) / (j - 1) if j > 1 else 0.0
    half = _z(confidence) * math.sqrt((smean + svar) / sum(lens))
    return SubMean(m, half)


def sub_amean(iterations: Sequence[Sequence[float]], *, seed: int = 0) -> SubMean:
    """SubAmean and SubAmeanCI: `sub_mean` with the arithmetic mean."""
    return sub_mean(iterations, "amean", seed=seed)


# -- ratios, summary scores, performance per watt, verdicts -----------------------------------


def ratio(new: float, base: float) -> float:
    """new / base (MMTests rdiff): 0 if base is 0 or NaN; 1 if new is 0 or NaN."""
    if base == 0 or math.isnan(base):
        return 0.0
    if new == 0 or math.isnan(new):
        return 1.0
    return new / base


def gmean_ratio(ratios: Iterable[float]) -> float:
    """One score from many per-parameter ratios: their geometric mean (MMTests Gmean row).

    A NaN ratio counts as 1 and a zero one as 0.00001, as in Compare.pm.
    """
    cleaned = [
        1.0 if math.isnan(r) else GMEAN_ZERO_RATIO if r == 0 else r
        for r in (float(r) for r in ratios)
    ]
    return gmean(cleaned) if cleaned else math.nan


def fmt_ratio(value: float, neutral: bool = False, decimals: int = 2) -> str:
    """A ratio as governor patch summaries print it: "1.05", or "~" when neutral."""
    if neutral:
        return "~"
    if math.isnan(value):
        return "-"
    return f"{value:.{decimals}f}"


@dataclass(frozen=True)
class RatioSummary:
    """Gmean over parameters of result/baseline, with the interval of the model's answer."""

    ratio: float
    ci_low: float
    ci_high: float
    ratios: tuple[float, ...]
    """Per parameter, in the order given."""


def summary_ratio(
    pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
    better: str,
    level: float = INTERVAL_LEVEL,
) -> RatioSummary:
    """The benchmark's score, geometric mean over parameters of mean(new) / mean(base), and the
    interval in which the model puts it (the lab's addition: MMTests has none for Gmean).

    `pairs` holds (base_samples, new_samples) per parameter, the samples in iteration order; the
    means are those of `mean_for`. Iteration k of both sides simulated the same model variant
    (and a nominal campaign the same model), so each iteration gives one answer,

        g_k = gmean_p new_p[k] / base_p[k],     x_k = ln g_k,

    and the interval is a prediction interval for one more such answer: the spread of the
    answers over the model's uncertain constants and the run-to-run variation, which is where the
    real machine's ratio should lie if the model's ranges hold,

        G * exp(+- t_{(1+level)/2, n-1} * s_x * sqrt(1 + 1/n))

    with s_x the sample standard deviation of the x_k over the n iterations every parameter has
    on both sides. Fewer than two such iterations: the interval is unknown (NaN); answers that do
    not spread give the point [G, G].
    """
    ratios = []
    for base, new in pairs:
        ratios.append(ratio(mean_for(_values(new), better), mean_for(_values(base), better)))
    g = gmean_ratio(ratios)
    half = prediction_halfwidth(_iteration_log_ratios(pairs), level)
    if not ratios or math.isnan(g) or math.isnan(half):
        return RatioSummary(g, math.nan, math.nan, tuple(ratios))
    return RatioSummary(g, g * math.exp(-half), g * math.exp(half), tuple(ratios))


def prediction_halfwidth(xs: Sequence[float], level: float = INTERVAL_LEVEL) -> float:
    """Half the width of the `level` prediction interval of one more sample like `xs`:

        t_{(1+level)/2, n-1} * s * sqrt(1 + 1/n)

    (normal samples, mean and spread estimated from the n samples). NaN for fewer than two."""
    v = _values(xs)
    if len(v) < 2:
        return math.nan
    spread = stddev(v)
    if spread <= FLOAT_NOISE * max(1.0, max(abs(x) for x in v)):
        return 0.0  # equal answers, up to rounding (ratios of scaled samples)
    n = len(v)
    return student_t_quantile(0.5 + level / 2, n - 1) * spread * math.sqrt(1 + 1 / n)


def _iteration_log_ratios(pairs: Sequence[tuple[Sequence[float], Sequence[float]]]) -> list[float]:
    """ln g_k for each iteration k that every parameter has, finite and positive, on both sides."""
    if not pairs:
        return []
    out = []
    for k in range(min(min(len(b), len(n)) for b, n in pairs)):
        logs = [math.log(n[k] / b[k]) for b, n in pairs if b[k] > 0 and n[k] > 0]
        if len(logs) == len(pairs):
            out.append(math.fsum(logs) / len(logs))
    return out


def perf_per_watt(value: float, avg_package_w: float, better: str) -> float:
    """Performance per watt of one run: performance / average package power.

    Performance is the metric for higher-is-better benchmarks and 1/metric for lower ones. For a
    throughput benchmark value / P = value * t / E, the work done per joule (MB/J, ops/J). For a
    fixed-work benchmark whose metric is its elapsed time t, (1/t) / (E/t) = 1/E.
    """
    if avg_package_w <= 0 or value <= 0:
        return math.nan
    perf = value if _direction(better) == "higher" else 1.0 / value
    return perf / avg_package_w


def perf_per_watt_ratio(perf_ratio: float, better: str, base_w: float, new_w: float) -> float:
    """Performance-per-watt relative to the baseline, above 1 is better:

        PPW ratio = (performance ratio, oriented so that > 1 is better) / (new_w / base_w)

    with perf_ratio = result/baseline (inverted for lower-is-better). This is how the published
    tables were built: on the intel-invariance calibration tables it reproduces every
    non-neutral PPW cell from the ratio and power cells to within rounding. For one fixed-work
    run it is E_base / E_new; for throughput at equal duration, (T_new/E_new) / (T_base/E_base).
    """
    if not (perf_ratio > 0 and base_w > 0 and new_w > 0):
        return math.nan
    oriented = perf_ratio if _direction(better) == "higher" else 1.0 / perf_ratio
    return oriented * base_w / new_w


def verdict(ci_low: float, ci_high: float, better: str, band: float = NEUTRAL_BAND) -> Verdict:
    """What the model can say about a ratio result/baseline, from its interval.

    improved or regressed when the whole interval lies beyond 1 +- band on one side (which side
    is better follows `better`), neutral when it lies within 1 +- band, and uncertain when it
    straddles an edge of the band or is unknown (NaN): the model cannot tell.
    """
    if math.isnan(ci_low) or math.isnan(ci_high):
        return "uncertain"
    if ci_low > 1.0 + band or ci_high < 1.0 - band:
        higher = ci_low > 1.0 + band
        return "improved" if higher == (_direction(better) == "higher") else "regressed"
    if ci_low >= 1.0 - band - 1e-12 and ci_high <= 1.0 + band + 1e-12:
        return "neutral"
    return "uncertain"


# -- helpers -----------------------------------------------------------------------------------


def _values(xs: Iterable[float]) -> list[float]:
    return [float(x) for x in xs if not math.isnan(float(x))]


def _direction(better: str) -> Better:
    if better == "higher":
        return "higher"
    if better == "lower":
        return "lower"
    raise ConfigError(f"better must be 'higher' or 'lower' (got {better!r})")


def _z(confidence: float) -> float:
    """The two-sided normal quantile: 1.959964 for 95% (R's qnorm(0.975))."""
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def _resampled(
    rng: np.random.Generator, g: NDArray[np.float64], size: int, count: int, f: Rows
) -> NDArray[np.float64]:
    """f over `count` draws of `size` samples of g with replacement, in memory-bounded blocks."""
    import numpy as np

    block = max(1, 4_000_000 // size)
    out = []
    for start in range(0, count, block):
        rows = min(block, count - start)
        out.append(f(g[rng.integers(0, g.size, size=(rows, size))]))
    return np.concatenate(out)


def _np_amean(a: NDArray[np.float64]) -> NDArray[np.float64]:
    import numpy as np

    return np.asarray(a.mean(axis=1), dtype=np.float64)


def _np_hmean(a: NDArray[np.float64]) -> NDArray[np.float64]:
    import numpy as np

    with np.errstate(divide="ignore"):
        h = np.where((a > 0).all(axis=1), a.shape[1] / (1.0 / a).sum(axis=1), np.nan)
    return np.asarray(h, dtype=np.float64)


def _np_gmean(a: NDArray[np.float64]) -> NDArray[np.float64]:
    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.exp(np.log(a).mean(axis=1))
    return np.asarray(g, dtype=np.float64)


def _np_pvar(a: NDArray[np.float64]) -> NDArray[np.float64]:
    import numpy as np

    return np.asarray(a.var(axis=1), dtype=np.float64)
