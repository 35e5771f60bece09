"""dvfslab.report.stats against hand-computed values and MMTests' statistics (Stat.pm,
Compare.pm): a worked example, the Gmean-over-parameters rule on the published intel-invariance
tables, and the edge cases (one sample, zero variance, lower is better).
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from dvfslab import ConfigError
from dvfslab.report import stats
from report_data import CALIBRATION

# A worked example (a higher-is-better metric), computed by hand.
B5_BASE = [100, 102, 98, 101, 99]
B5_NEW = [105, 107, 103, 106, 104]
Z95 = 1.959963984540054


# -- means and spreads -------------------------------------------------------------------------


def test_means_of_one_two_four():
    assert stats.amean([1, 2, 4]) == pytest.approx(7 / 3)
    assert stats.hmean([1, 2, 4]) == pytest.approx(3 / (1 + 1 / 2 + 1 / 4))
    assert stats.gmean([1, 2, 4]) == pytest.approx(2.0)


def test_means_skip_nan_samples_and_are_nan_without_samples():
    assert stats.amean([1, math.nan, 3]) == 2.0
    assert math.isnan(stats.amean([]))
    assert math.isnan(stats.hmean([]))
    assert math.isnan(stats.gmean([]))


def test_hmean_is_nan_for_non_positive_samples_and_gmean_zero_for_a_zero():
    assert math.isnan(stats.hmean([1, 0, 2]))
    assert math.isnan(stats.hmean([1, -1]))
    assert stats.gmean([3, 0, 5]) == 0.0
    assert math.isnan(stats.gmean([3, -1]))


def test_stddev_is_the_sample_standard_deviation():
    # sum of squares about 5 is 32, over n - 1 = 7
    assert stats.stddev([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(math.sqrt(32 / 7))


@pytest.mark.parametrize("fn", [stats.stddev, stats.hstddev])
def test_spread_of_constant_samples_is_zero(fn):
    assert fn([7.0, 7.0, 7.0]) == 0.0


def test_one_sample_stddev_is_undefined_but_hstddev_is_zero():
    assert math.isnan(stats.stddev([5.0]))
    assert stats.hstddev([5.0]) == 0.0
    assert math.isnan(stats.coeff_var([5.0], "lower"))
    assert stats.coeff_var([5.0], "higher") == 0.0


def test_coeff_var_is_zero_when_the_mean_is_zero():
    assert stats.coeff_var([-1.0, 1.0], "lower") == 0.0


def test_hstddev_by_hand():
    # H of [1, 2] is 4/3; reciprocals 1 and 1/2 sit 1/4 either side of 3/4 = 1/H
    h = 4 / 3
    assert stats.hstddev([1, 2]) == pytest.approx(h * h * 0.25)


def test_b5_worked_example_row_statistics():
    base, new = stats.summarise(B5_BASE, "higher"), stats.summarise(B5_NEW, "higher")
    assert (base.kind, base.n, base.min, base.max) == ("hmean", 5, 98, 102)
    assert base.mean == pytest.approx(99.980, abs=5e-4)
    assert new.mean == pytest.approx(104.981, abs=5e-4)
    assert base.stddev == pytest.approx(1.414, abs=5e-4)
    assert new.stddev == pytest.approx(1.414, abs=5e-4)
    assert round(base.coeffvar, 2) == 1.41
    assert round(new.coeffvar, 2) == 1.35
    lo, hi = base.ci
    assert (hi - lo) / 2 == pytest.approx(2.77, abs=5e-3)
    assert stats.best_mean(B5_NEW, "higher", 95) == pytest.approx(105.49, abs=5e-3)
    assert stats.pct_value(B5_NEW, "higher", 95) == 104


def test_best_first_order_follows_the_direction():
    assert stats.best_first([3, 1, 2], "lower") == [1, 2, 3]
    assert stats.best_first([3, 1, 2], "higher") == [3, 2, 1]
    # Pct.95 of 20 lower-is-better samples is the 19th smallest
    assert stats.pct_value(range(1, 21), "lower", 95) == 19
    assert stats.best_mean(range(1, 21), "lower", 95) == pytest.approx(10.0)


# -- percentage column ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "new", "better", "expected"),
    [
        (100, 105, "higher", 5.0),  # more throughput: better, positive
        (100, 95, "higher", -5.0),
        (100, 95, "lower", 5.0),  # less time: better, positive
        (100, 105, "lower", -5.0),
        (100, 100, "higher", 0.0),
        (100, 100, "lower", 0.0),
        (0, 5, "higher", 100.0),  # MMTests' special cases
        (5, 0, "higher", 0.0),
        (5, 0, "lower", 100.0),
        (0, 5, "lower", -99.0),
    ],
)
def test_pct_diff_positive_means_better(base, new, better, expected):
    assert stats.pct_diff(base, new, better) == pytest.approx(expected)


def test_pct_diff_of_the_b5_means_is_plus_five_percent():
    pct = stats.pct_diff(stats.hmean(B5_BASE), stats.hmean(B5_NEW), "higher")
    assert f"{pct:7.2f}" == "   5.00"


def test_pct_diff_nan_in_nan_out():
    assert math.isnan(stats.pct_diff(math.nan, 1.0, "higher"))


# -- significance ----------------------------------------------------------------------------


def test_b5_is_not_starred_by_the_ci_rule_but_was_by_the_ttest():
    ci = stats.significance(B5_BASE, B5_NEW, "higher")
    assert not ci.significant
    assert abs(ci.score) == pytest.approx(0.90, abs=5e-3)
    old = stats.significance(B5_BASE, B5_NEW, "higher", method="ttest")
    assert old.significant
    # t ~ 5.0 on 8 df: stderr = sqrt(2.5/5 + 2.5/5) = 1 (amean-based s = sqrt(2.5) on both
    # sides), over the difference of the Hmeans
    t = stats.hmean(B5_NEW) - stats.hmean(B5_BASE)
    assert t == pytest.approx(5.0, abs=1e-3)
    assert old.score == pytest.approx(stats.student_t_sf2(t, 8), rel=1e-9)
    assert old.score == pytest.approx(0.00105, abs=5e-5)


def test_cidiff_by_hand():
    # new 10 with [9, 11], base 6 with [5, 7]: diff 4, facing half-widths 1 + 1
    assert stats.cidiff(10, (9, 11), 6, (5, 7)) == 2.0
    assert stats.cidiff(6, (5, 7), 10, (9, 11)) == -2.0
    # no spread at all: the raw difference, as Stat.pm returns it
    assert stats.cidiff(10, (10, 10), 6, (6, 6)) == 4.0


def test_lower_is_better_significance_uses_amean_bands():
    base, new = [10.0, 10.2, 9.8], [8.0, 8.2, 7.8]  # sd 0.2 each: bands +-0.392, 2.0 apart
    sig = stats.significance(base, new, "lower")
    assert sig.significant
    assert sig.score == pytest.approx(-2.0 / (2 * Z95 * 0.2))


@pytest.mark.parametrize("method", ["ci", "ttest"])
def test_zero_variance_is_significant_only_if_the_means_differ(method):
    assert stats.significance([5, 5, 5], [6, 6, 6], "lower", method).significant
    assert not stats.significance([5, 5, 5], [5, 5, 5], "lower", method).significant
    assert stats.significance([5, 5, 5], [6, 6, 6], "higher", method).significant


def test_one_sample_each_side():
    # Amean: no standard deviation, so never significant; Hmean: HStddev 0, points apart
    assert not stats.significance([5], [6], "lower").significant
    assert stats.significance([5], [6], "higher").significant
    # the t-test needs two samples a side
    t = stats.significance([5], [6], "lower", method="ttest")
    assert not t.significant
    assert math.isnan(t.score)


def test_unknown_significance_method_is_a_config_error():
    with pytest.raises(ConfigError, match="'ci' or 'ttest'"):
        stats.significance([1, 2], [1, 2], "lower", method="welch")  # type: ignore[arg-type]


@pytest.mark.parametrize("t", [0.5, 1.0, 3.0, 12.0])
def test_student_t_tails_match_closed_forms(t):
    assert stats.student_t_sf2(t, 1) == pytest.approx(1 - 2 / math.pi * math.atan(t), rel=1e-10)
    assert stats.student_t_sf2(t, 2) == pytest.approx(1 - t / math.sqrt(2 + t * t), rel=1e-10)


def test_student_t_quantiles_from_the_tables():
    assert stats.student_t_quantile(0.975, 8) == pytest.approx(2.306004, abs=1e-5)
    assert stats.student_t_quantile(0.95, 4) == pytest.approx(2.131847, abs=1e-5)
    assert stats.student_t_quantile(0.975, math.inf) == pytest.approx(Z95, abs=1e-9)
    assert stats.student_t_quantile(0.975, 1e7) == pytest.approx(Z95, abs=1e-5)


@pytest.mark.parametrize("df", [1, 2.5, 8, 57.3, 1e5])
@pytest.mark.parametrize("p", [0.6, 0.95, 0.995])
def test_student_t_quantile_inverts_the_tail(df, p):
    """The Welch degrees of freedom are fractional: the quantile holds between table rows too."""
    q = stats.student_t_quantile(p, df)
    assert stats.student_t_sf2(q, df) == pytest.approx(2 * (1 - p), rel=1e-12)
    assert stats.student_t_sf2(-q, df) == stats.student_t_sf2(q, df)


# -- SubAmean ----------------------------------------------------------------------------------


def test_sub_amean_by_hand():
    # Constant iterations: med = 1 and 3, no within variance, len_j = int(0.8 * 5) = 4.
    # m = 2; smean = ((1-2)^2 * 4 + (3-2)^2 * 4) / (2 - 1) = 8; half = z * sqrt(8 / 8) = z.
    sub = stats.sub_amean([[1.0] * 5, [3.0] * 5])
    assert sub.value == 2.0
    assert sub.ci_half == pytest.approx(Z95)
    assert sub.ci == pytest.approx((2 - Z95, 2 + Z95))


def test_sub_amean_one_constant_iteration_has_no_interval():
    assert stats.sub_amean([[4.0, 4.0, 4.0]]) == stats.SubMean(4.0, 0.0)


def test_sub_amean_is_seeded():
    data = [[1, 5, 2, 8, 3, 9, 4], [2, 6, 3, 7, 5, 1, 9]]
    assert stats.sub_amean(data, seed=3) == stats.sub_amean(data, seed=3)
    assert stats.sub_amean(data, seed=3) != stats.sub_amean(data, seed=4)


def test_sub_amean_converges_to_the_mean_and_its_standard_error():
    # One large iteration: the median of the subsample means is near the mean, the median of
    # their variances near the population variance, so half ~ z * sigma / sqrt(0.8 n).
    xs = [float(i % 10) for i in range(1000)]  # mean 4.5, population variance 8.25
    sub = stats.sub_amean([xs], seed=1)
    assert sub.value == pytest.approx(4.5, abs=0.05)
    assert sub.ci_half == pytest.approx(Z95 * math.sqrt(8.25 / 800), rel=0.05)


def test_sub_mean_takes_the_harmonic_mean_too():
    assert stats.sub_mean([[2.0, 2.0], [4.0, 4.0]], "hmean").value == 3.0
    with pytest.raises(ConfigError, match="amean, hmean or gmean"):
        stats.sub_mean([[1.0]], "median")  # type: ignore[arg-type]


# -- ratios and scores -------------------------------------------------------------------------


def test_ratio_edge_cases_are_mmtests_rdiff():
    assert stats.ratio(3.0, 2.0) == 1.5
    assert stats.ratio(3.0, 0.0) == 0.0
    assert stats.ratio(3.0, math.nan) == 0.0
    assert stats.ratio(0.0, 2.0) == 1.0
    assert stats.ratio(math.nan, 2.0) == 1.0


def test_gmean_ratio_counts_nan_as_one_and_zero_as_a_tiny_ratio():
    assert stats.gmean_ratio([2.0, 0.5]) == pytest.approx(1.0)
    assert stats.gmean_ratio([4.0, math.nan]) == pytest.approx(math.sqrt(4.0))
    assert stats.gmean_ratio([1.0, 0.0]) == pytest.approx(math.sqrt(1e-5))
    assert math.isnan(stats.gmean_ratio([]))


def test_fmt_ratio_prints_tilde_when_neutral():
    assert stats.fmt_ratio(1.0452) == "1.05"
    assert stats.fmt_ratio(1.0452, neutral=True) == "~"
    assert stats.fmt_ratio(math.nan) == "-"


def test_gmean_over_parameters_reproduces_the_published_scores():
    """A benchmark's score is the Gmean over its parameters of result/baseline, as in the
    published tables: the published per-parameter values (intel-invariance detail table) give
    the published ratios."""
    detail = pd.read_csv(CALIBRATION / "intel-invariance-detail.csv")
    published = pd.read_csv(CALIBRATION / "intel-invariance-ratios.csv").set_index(
        ["machine", "benchmark", "config"]
    )["ratio"]
    checked = 0
    for (machine, benchmark), rows in detail.groupby(["machine", "benchmark"]):
        base = rows[rows["config"] == "baseline-schedutil-noninv"].set_index("param")["value"]
        for config, cfg in rows.groupby("config"):
            if config == "baseline-schedutil-noninv":
                continue
            values = cfg.set_index("param")["value"]
            score = stats.gmean_ratio(stats.ratio(values[p], base[p]) for p in values.index)
            assert round(score, 2) == published[(machine, benchmark, config)], (
                machine,
                benchmark,
                config,
            )
            checked += 1
    assert checked == 14


def test_summary_ratio_without_spread_has_a_point_interval():
    r = stats.summary_ratio([([100] * 3, [110] * 3), ([200] * 3, [220] * 3)], "higher")
    assert r.ratio == pytest.approx(1.1)
    assert (r.ci_low, r.ci_high) == pytest.approx((1.1, 1.1))
    assert r.ratios == pytest.approx((1.1, 1.1))


def test_summary_ratio_interval_by_hand():
    # One parameter, iterations paired: base [10, 10, 10], new [18, 20, 22] -> answers
    # x_k = ln 1.8, ln 2.0, ln 2.2; G = 20 / 10 = 2 (lower is better: amean).
    r = stats.summary_ratio([([10, 10, 10], [18, 20, 22])], "lower")
    xs = [math.log(1.8), math.log(2.0), math.log(2.2)]
    mean = sum(xs) / 3
    s = math.sqrt(sum((x - mean) ** 2 for x in xs) / 2)
    half = stats.student_t_quantile(0.95, 2) * s * math.sqrt(1 + 1 / 3)
    assert r.ratio == pytest.approx(2.0)
    assert r.ci_low == pytest.approx(2.0 * math.exp(-half))
    assert r.ci_high == pytest.approx(2.0 * math.exp(half))


def test_summary_ratio_answers_are_per_iteration_gmeans_over_parameters():
    # Two parameters that move opposite ways in each iteration: every iteration's gmean over
    # them is exactly 1, so the model's answer does not spread although each parameter does.
    base = ([10.0, 10.0, 10.0], [10.0, 10.0, 10.0])
    new = ([11.0, 12.0, 13.0], [100 / 11, 100 / 12, 100 / 13])
    r = stats.summary_ratio(list(zip(base, new)), "higher")
    assert (r.ci_low, r.ci_high) == pytest.approx((r.ratio, r.ratio))


def test_summary_ratio_level_widens_the_interval():
    pairs = [([10.0, 10.0, 10.0, 10.0], [10.5, 11.0, 11.5, 12.0])]
    narrow = stats.summary_ratio(pairs, "higher", level=0.5)
    wide = stats.summary_ratio(pairs, "higher", level=0.9)
    assert wide.ci_low < narrow.ci_low < narrow.ratio < narrow.ci_high < wide.ci_high


def test_summary_ratio_of_one_iteration_has_no_interval():
    r = stats.summary_ratio([([10.0], [12.0])], "lower")
    assert r.ratio == pytest.approx(1.2)
    assert math.isnan(r.ci_low)
    assert math.isnan(r.ci_high)


def test_prediction_halfwidth_by_hand():
    # xs 1, 2, 3: s = 1, t_{0.95, 2} = 2.919986, sqrt(1 + 1/3)
    got = stats.prediction_halfwidth([1.0, 2.0, 3.0])
    assert got == pytest.approx(2.919986 * math.sqrt(4 / 3), rel=1e-5)
    assert stats.prediction_halfwidth([5.0, 5.0]) == 0.0
    assert math.isnan(stats.prediction_halfwidth([5.0]))


# -- performance per watt and verdicts ---------------------------------------------------------


def test_perf_per_watt_of_a_throughput_and_a_fixed_work_run():
    # 500 MB/s at 100 W over 60 s: 30000 MB for 6000 J = 5 MB/J = 500 / 100
    assert stats.perf_per_watt(500.0, 100.0, "higher") == pytest.approx(5.0)
    # a 20 s build at 50 W: 1000 J, so 1/E = 0.001
    assert stats.perf_per_watt(20.0, 50.0, "lower") == pytest.approx(1 / 1000)
    assert math.isnan(stats.perf_per_watt(20.0, 0.0, "lower"))


def test_perf_per_watt_ratio_of_fixed_work_is_the_energy_ratio():
    # baseline: 100 s at 50 W (5000 J); new: 80 s at 55 W (4400 J)
    ratio = stats.perf_per_watt_ratio(80 / 100, "lower", 50.0, 55.0)
    assert ratio == pytest.approx(5000 / 4400)


def test_perf_per_watt_ratio_of_throughput_is_work_per_joule():
    # equal 60 s runs: 100 MB/s at 50 W vs 130 MB/s at 60 W
    ratio = stats.perf_per_watt_ratio(1.3, "higher", 50.0, 60.0)
    assert ratio == pytest.approx((130 * 60 / (60 * 60)) / (100 * 60 / (50 * 60)))


def test_perf_per_watt_ratio_reproduces_the_published_table():
    """PPW ratio = oriented perf ratio / power ratio: on the published intel-invariance tables
    every non-neutral cell agrees to within their rounding (ratios and watts to 0.01)."""
    folder = CALIBRATION
    ratios = pd.read_csv(folder / "intel-invariance-ratios.csv")
    watts = pd.read_csv(folder / "intel-invariance-power-watts.csv").set_index(
        ["machine", "benchmark", "config"]
    )["package_watts"]
    ppw = pd.read_csv(folder / "intel-invariance-perf-per-watt-ratios.csv").set_index(
        ["machine", "benchmark", "config"]
    )
    checked = 0
    for r in ratios[ratios["neutral"] == 0].itertuples():
        key = (r.machine, r.benchmark, r.config)
        # Haswell's lower-is-better tables label their last column 8C, the PPW table 12C
        if key not in ppw.index or ppw.loc[key, "neutral"]:
            continue
        base_w = watts[(r.machine, r.benchmark, "baseline-schedutil-noninv")]
        got = stats.perf_per_watt_ratio(r.ratio, r.better, base_w, watts[key])
        assert got == pytest.approx(ppw.loc[key, "perf_per_watt_ratio"], abs=0.015), key
        checked += 1
    assert checked > 50


@pytest.mark.parametrize(
    ("lo", "hi", "better", "expected"),
    [
        (1.03, 1.08, "higher", "improved"),
        (1.03, 1.08, "lower", "regressed"),
        (0.88, 0.92, "lower", "improved"),
        (0.88, 0.92, "higher", "regressed"),
        (0.985, 1.015, "higher", "neutral"),  # inside the +-2% band
        (0.98, 1.02, "lower", "neutral"),  # on its edges
        (1.01, 1.05, "higher", "uncertain"),  # straddles the band's upper edge
        (0.97, 1.01, "higher", "uncertain"),  # straddles the lower edge
        (0.95, 1.08, "higher", "uncertain"),  # both
        (math.nan, math.nan, "higher", "uncertain"),  # no interval known
    ],
)
def test_verdict(lo, hi, better, expected):
    assert stats.verdict(lo, hi, better) == expected


def test_verdict_band_is_a_setting():
    assert stats.verdict(1.01, 1.05, "higher", band=0.005) == "improved"


def test_bad_direction_is_a_config_error_naming_the_value():
    with pytest.raises(ConfigError, match="'higher' or 'lower' \\(got 'up'\\)"):
        stats.mean_for([1.0], "up")
    with pytest.raises(ValueError, match="sideways"):
        stats.pct_diff(1.0, 2.0, "sideways")
