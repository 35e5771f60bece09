"""dvfslab.report: a results table with known answers in, the tables kernel engineers read out.

The synthetic campaign (report_data.py) scales the baseline's samples by one factor per
configuration, so every ratio, percentage, sign and verdict is known by hand. The published
intel-invariance tables, turned back into samples, must come out as published.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re

import pandas as pd
import pytest

from dvfslab import ConfigError
from dvfslab.report import (
    EXPORTERS,
    RESULT_COLUMNS,
    build_report,
    detail_tables,
    export,
    render,
)
from dvfslab.report.build import REPORT_SCHEMA
from report_data import (
    BASELINE,
    CALIBRATION,
    PUBLISHED_BASELINE,
    published_results,
    synthetic_results,
)

SUMMARY_KEYS = {
    "platform",
    "benchmark",
    "metric_unit",
    "better",
    "config",
    "baseline",
    "params",
    "perf_ratio",
    "perf_ratio_ci",
    "perf_per_watt_ratio",
    "avg_package_w",
    "verdict",
    "discrepancy_class",
    "discrepancy_ln",
    "predicted_ci",
    "model_verdict",
}
DETAIL_KEYS = {
    "platform",
    "benchmark",
    "param",
    "metric_unit",
    "better",
    "config",
    "baseline",
    "mean_kind",
    "n",
    "mean",
    "stddev",
    "coeffvar",
    "min",
    "max",
    "pct_diff",
    "significant",
    "significance_score",
    "ratio",
    "avg_package_w",
    "energy_j",
}

# (benchmark, config) -> perf ratio, PPW ratio, verdict. PPW = oriented ratio / power ratio:
# fast draws 120 W, slow 80 W, the others 100 W. For the fixed-work benchmark (elapsed) the PPW
# ratio is also the energy ratio: fast uses 120 W * 0.9 t = 108 t against 100 t.
EXPECTED = {
    ("tput", "fast"): (1.10, 1.10 / 1.2, "improved"),
    ("tput", "slow"): (0.80, 0.80 / 0.8, "regressed"),
    ("tput", "same"): (1.001, 1.001, "neutral"),
    ("elapsed", "fast"): (0.90, 100 / 108, "improved"),
    ("elapsed", "slow"): (1.25, (1 / 1.25) / 0.8, "regressed"),
    ("elapsed", "same"): (1.001, 1 / 1.001, "neutral"),
    ("tput", BASELINE): (1.0, 1.0, "baseline"),
    ("elapsed", BASELINE): (1.0, 1.0, "baseline"),
}
# (benchmark, config) -> percentage column (positive = better), starred?
EXPECTED_PCT = {
    ("tput", "fast"): (10.0, True),
    ("tput", "slow"): (-20.0, True),
    ("tput", "same"): (0.1, False),
    ("elapsed", "fast"): (10.0, True),
    ("elapsed", "slow"): (-25.0, True),
    ("elapsed", "same"): (-0.1, False),
}


@pytest.fixture(scope="module")
def report():
    return build_report(synthetic_results(), BASELINE)


def summary_row(report, benchmark, config):
    s = report.summary
    rows = s[(s["benchmark"] == benchmark) & (s["config"] == config)]
    assert len(rows) == 1
    return rows.iloc[0]


# -- the numbers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("benchmark", "config"), sorted(EXPECTED))
def test_summary_ratio_ppw_and_verdict(report, benchmark, config):
    ratio, ppw, verdict = EXPECTED[(benchmark, config)]
    row = summary_row(report, benchmark, config)
    assert row["perf_ratio"] == pytest.approx(ratio)
    assert row["perf_per_watt_ratio"] == pytest.approx(ppw)
    assert row["verdict"] == verdict
    assert row["params"] == 2
    assert row["perf_ratio_ci_low"] <= row["perf_ratio"] <= row["perf_ratio_ci_high"]


def test_summary_interval_is_a_point_when_every_iteration_gives_the_same_answer(report):
    # Every configuration scales the baseline's samples iteration by iteration: the samples
    # spread, the per-iteration answers (ratios) do not.
    row = summary_row(report, "elapsed", "fast")
    assert (row["perf_ratio_ci_low"], row["perf_ratio_ci_high"]) == pytest.approx((0.9, 0.9))


SPREAD_FACTORS = [1.02, 1.06, 1.10, 1.14]


@pytest.fixture(scope="module")
def spread_report():
    """tput/fast's iterations answer 1.02, 1.06, 1.10, 1.14 on both parameters."""
    df = synthetic_results()
    fast = (df["config"] == "fast") & (df["benchmark"] == "tput")
    base = df[(df["config"] == BASELINE) & (df["benchmark"] == "tput")]
    for (param, it), value in base.set_index(["param", "iteration"])["metric_value"].items():
        at = fast & (df["param"] == param) & (df["iteration"] == it)
        df.loc[at, "metric_value"] = value * SPREAD_FACTORS[it]
    return build_report(df, BASELINE)


def test_summary_interval_and_verdict_follow_the_spread_of_the_answers(spread_report):
    # The interval comes from the spread of the answers' logs, around the ratio of means.
    factors = SPREAD_FACTORS
    row = summary_row(spread_report, "tput", "fast")
    logs = [math.log(f) for f in factors]
    mean = sum(logs) / 4
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 3)
    from dvfslab.report.stats import student_t_quantile

    half = student_t_quantile(0.95, 3) * sd * math.sqrt(1 + 1 / 4)
    assert row["perf_ratio_ci_low"] == pytest.approx(row["perf_ratio"] * math.exp(-half))
    assert row["perf_ratio_ci_high"] == pytest.approx(row["perf_ratio"] * math.exp(half))
    assert row["perf_ratio_ci_low"] < 1.02 < row["perf_ratio_ci_high"]
    assert row["verdict"] == "uncertain"


def test_summary_power_is_the_run_length_weighted_average(report):
    assert summary_row(report, "elapsed", "fast")["avg_package_w"] == pytest.approx(120.0)
    results = synthetic_results()
    # give one baseline run twice the power: the average weights it by its length
    mask = (results["benchmark"] == "elapsed") & (results["config"] == BASELINE)
    first = results[mask].index[0]
    results.loc[first, "avg_package_w"] = 200.0
    seconds = results.loc[mask, "sim_time_s"]
    expected = (100 * seconds.sum() + 100 * seconds[first]) / seconds.sum()
    row = summary_row(build_report(results, BASELINE), "elapsed", BASELINE)
    assert row["avg_package_w"] == pytest.approx(expected)


@pytest.mark.parametrize(("benchmark", "config"), sorted(EXPECTED_PCT))
def test_detail_percentages_signs_and_stars(report, benchmark, config):
    pct, starred = EXPECTED_PCT[(benchmark, config)]
    d = report.detail
    rows = d[(d["benchmark"] == benchmark) & (d["config"] == config)]
    assert len(rows) == 2
    assert rows["pct_diff"].tolist() == pytest.approx([pct, pct])
    assert rows["significant"].tolist() == [starred, starred]


def test_detail_statistics_follow_the_direction(report):
    d = report.detail.set_index(["benchmark", "param", "config"])
    tput = d.loc[("tput", "clients=2", BASELINE)]
    assert tput["mean_kind"] == "hmean"
    assert tput["mean"] == pytest.approx(4 / (2 / 99 + 2 / 101))
    elapsed = d.loc[("elapsed", "jobs=2", BASELINE)]
    assert elapsed["mean_kind"] == "amean"
    assert (elapsed["mean"], elapsed["n"]) == (50.0, 4)
    assert elapsed["stddev"] == pytest.approx(math.sqrt(4 / 3))
    assert elapsed["coeffvar"] == pytest.approx(100 * math.sqrt(4 / 3) / 50)
    assert (elapsed["min"], elapsed["max"]) == (49.0, 51.0)
    assert not elapsed["significant"]
    assert math.isnan(elapsed["significance_score"])


def test_parameters_sort_naturally_and_baseline_comes_first(report):
    d = report.detail
    tput = d[d["benchmark"] == "tput"]
    assert list(dict.fromkeys(tput["param"])) == ["clients=2", "clients=16"]
    assert tput["config"].iloc[0] == BASELINE


def test_ttest_significance_is_an_option():
    rep = build_report(synthetic_results(), BASELINE, significance="ttest")
    d = rep.detail
    fast = d[(d["config"] == "fast")]
    assert fast["significant"].all()
    assert (fast["significance_score"] < 0.10).all()
    assert rep.to_dict()["significance"] == "ttest"


def test_a_missing_parameter_is_left_out_of_the_score():
    results = synthetic_results()
    results = results[~((results["config"] == "fast") & (results["param"] == "clients=16"))]
    rep = build_report(results, BASELINE)
    row = summary_row(rep, "tput", "fast")
    assert row["params"] == 1
    assert row["perf_ratio"] == pytest.approx(1.10)


def test_two_platforms_each_compared_with_their_own_baseline():
    rep = build_report(synthetic_results(("a", "b")), BASELINE)
    assert list(dict.fromkeys(rep.summary["platform"])) == ["a", "b"]
    assert len(rep.summary) == 2 * 2 * 4


# -- input errors --------------------------------------------------------------------------------


def test_missing_columns_are_named():
    with pytest.raises(ConfigError, match="lacks column\\(s\\) energy_j"):
        build_report(synthetic_results().drop(columns="energy_j"), BASELINE)


def test_unknown_baseline_lists_the_configurations():
    with pytest.raises(ConfigError, match=r"baseline 'nope' is not a configuration.*fast"):
        build_report(synthetic_results(), "nope")


def test_baseline_missing_for_one_benchmark_is_an_error():
    results = synthetic_results()
    results = results[~((results["benchmark"] == "tput") & (results["config"] == BASELINE))]
    with pytest.raises(ConfigError, match="no runs for box tput"):
        build_report(results, BASELINE)


def test_a_benchmark_with_two_directions_is_an_error():
    results = synthetic_results()
    results.loc[results.index[0], "better"] = "lower"
    with pytest.raises(ConfigError, match="disagree on better"):
        build_report(results, BASELINE)


def test_bad_direction_and_empty_table_are_errors():
    results = synthetic_results()
    results.loc[results.index[0], "better"] = "up"
    with pytest.raises(ConfigError, match="'higher' or 'lower'"):
        build_report(results, BASELINE)
    with pytest.raises(ConfigError, match="no runs"):
        build_report(synthetic_results().iloc[:0], BASELINE)


def test_non_numeric_metric_and_unknown_significance_are_errors():
    results = synthetic_results()
    results["metric_value"] = results["metric_value"].astype(object)
    results.loc[results.index[0], "metric_value"] = "fast"
    with pytest.raises(ConfigError, match="column metric_value must hold numbers"):
        build_report(results, BASELINE)
    with pytest.raises(ConfigError, match="'ci' or 'ttest'"):
        build_report(synthetic_results(), BASELINE, significance="welch")  # type: ignore[arg-type]


def test_unknown_format_is_an_error(report):
    with pytest.raises(ConfigError, match="text, markdown, csv, json"):
        render(report, "pdf")


# -- formats -------------------------------------------------------------------------------------


def test_json_parses_back_with_the_documented_schema(report):
    doc = json.loads(render(report, "json"))
    assert doc["schema"] == REPORT_SCHEMA == "dvfslab-report/2"
    assert (doc["baseline"], doc["significance"]) == (BASELINE, "ci")
    assert (doc["level"], doc["neutral_band"]) == (0.9, 0.02)
    assert len(doc["summary"]) == 2 * 4
    assert len(doc["detail"]) == 2 * 2 * 4
    assert all(set(row) == SUMMARY_KEYS for row in doc["summary"])
    assert all(set(row) == DETAIL_KEYS for row in doc["detail"])
    fast = next(r for r in doc["summary"] if (r["benchmark"], r["config"]) == ("tput", "fast"))
    assert fast["perf_ratio"] == pytest.approx(1.1)
    lo, hi = fast["perf_ratio_ci"]
    assert lo == pytest.approx(1.1)
    assert hi == pytest.approx(1.1)
    assert {r["verdict"] for r in doc["summary"]} == {
        "baseline",
        "improved",
        "regressed",
        "neutral",
    }
    base = next(r for r in doc["detail"] if r["config"] == BASELINE)
    assert base["significance_score"] is None  # NaN becomes null
    assert isinstance(base["significant"], bool)
    assert isinstance(base["n"], int)


def test_csv_summary_and_detail_parse_back(report):
    summary = list(csv.DictReader(io.StringIO(render(report, "csv"))))
    assert len(summary) == 8
    assert set(summary[0]) == (SUMMARY_KEYS - {"perf_ratio_ci", "predicted_ci"}) | {
        "perf_ratio_ci_low",
        "perf_ratio_ci_high",
        "predicted_ci_low",
        "predicted_ci_high",
    }
    cell = {(r["benchmark"], r["config"]): r for r in summary}
    for key, (ratio, ppw, verdict) in EXPECTED.items():
        assert float(cell[key]["perf_ratio"]) == pytest.approx(ratio)
        assert float(cell[key]["perf_per_watt_ratio"]) == pytest.approx(ppw)
        assert cell[key]["verdict"] == verdict
    detail = pd.read_csv(io.StringIO(render(report, "csv", table="detail")))
    assert set(detail.columns) == DETAIL_KEYS
    assert len(detail) == 16
    base = detail[detail["config"] == BASELINE]
    assert base["significance_score"].isna().all()  # empty in the CSV


def test_markdown_tables_have_the_expected_rows(report):
    text = render(report, "markdown")
    tables = _markdown_tables(text)
    titles = list(tables)
    assert titles == [
        f"box: performance ratio to {BASELINE} "
        "(geometric mean over parameters; ~ neutral, ? uncertain)",
        "box: average package power (W)",
        f"box: performance-per-watt ratio to {BASELINE} (higher is better)",
        "box tput (MB/s, Hmean, higher is better)",
        "box elapsed (s, Amean, lower is better)",
    ]
    ratio = tables[titles[0]]
    assert ratio[0] == ["benchmark", "better", "fast", "slow", "same"]
    assert ratio[1:] == [
        ["tput", "higher", "1.10", "0.80", "~"],
        ["elapsed", "lower", "0.90", "1.25", "~"],
    ]
    power = tables[titles[1]]
    assert power[1] == ["tput", "100.00", "120.00", "80.00", "100.00"]
    ppw = tables[titles[2]]
    assert ppw[1] == ["tput", "0.92", "~", "~"]
    assert ppw[2] == ["elapsed", "0.93", "~", "~"]
    tput = tables[titles[3]]
    assert tput[0] == ["statistic", "param", BASELINE, "fast", "slow", "same"]
    assert [row[:2] for row in tput[1:]] == [
        [stat, param]
        for stat in ("Hmean", "HStddev", "HCoeffVar")
        for param in ("clients=2", "clients=16")
    ]
    assert tput[1][2].endswith("(   0.00%)")
    assert tput[1][3].endswith("*  10.00%*")  # significant: starred
    assert tput[1][4].endswith("* -20.00%*")
    assert tput[1][5].endswith("(   0.10%)")  # not significant: in parentheses
    elapsed = tables[titles[4]]
    assert elapsed[1][:4] == ["Amean", "jobs=2", "50.00 (   0.00%)", "45.00 *  10.00%*"]
    assert elapsed[3][:3] == ["Stddev", "jobs=2", "1.15 (   0.00%)"]


def test_text_is_the_same_tables_in_plain_columns(report):
    out = io.StringIO()
    export(report, "text", out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("box: performance ratio to base")
    assert lines[1].split() == ["benchmark", "better", "fast", "slow", "same"]
    assert lines[2].split() == ["tput", "higher", "1.10", "0.80", "~"]
    hmean = next(line for line in lines if line.startswith("Hmean      clients=2"))
    assert "*  10.00%*" in hmean
    assert "(   0.10%)" in hmean


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_text_on_a_terminal_keeps_every_cell_whole(report):
    out = _Terminal()
    export(report, "text", out)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue())
    assert "…" not in plain  # rich neither folds nor cuts the MMTests cells
    assert "45.00 *  10.00%*" in plain
    assert "HCoeffVar   clients=16" in plain
    assert "-0.00%" not in plain


def test_text_shows_the_ratio_intervals_that_spread(spread_report):
    text = render(spread_report, "text")
    row = summary_row(spread_report, "tput", "fast")
    lo, hi = row["perf_ratio_ci_low"], row["perf_ratio_ci_high"]
    ratio = f"{row['perf_ratio']:.2f}? [{lo:.2f}, {hi:.2f}]"
    assert ratio in text
    assert ratio not in render(spread_report, "text", show_ci=False)


def test_one_exporter_per_format():
    assert sorted(EXPORTERS) == ["csv", "json", "markdown", "text"]


# -- the published tables, from samples ---------------------------------------------------------


@pytest.fixture(scope="module")
def published():
    return build_report(published_results(), PUBLISHED_BASELINE)


def test_published_scores_come_out_as_published(published):
    ratios = pd.read_csv(CALIBRATION / "intel-invariance-ratios.csv").set_index(
        ["machine", "benchmark", "config"]
    )
    checked = 0
    for row in published.summary.itertuples():
        if row.config == PUBLISHED_BASELINE:
            continue
        expected = ratios.loc[(row.platform, row.benchmark, row.config)]
        assert f"{row.perf_ratio:.2f}" == f"{expected['ratio']:.2f}"
        # every published cell of these three benchmarks is a (non-neutral) improvement
        assert expected["neutral"] == 0
        assert row.verdict == "improved", row
        checked += 1
    assert checked == 14


def test_published_power_and_ppw_come_out_as_published(published):
    watts = pd.read_csv(CALIBRATION / "intel-invariance-power-watts.csv").set_index(
        ["machine", "benchmark", "config"]
    )["package_watts"]
    ppw = pd.read_csv(CALIBRATION / "intel-invariance-perf-per-watt-ratios.csv").set_index(
        ["machine", "benchmark", "config"]
    )["perf_per_watt_ratio"]
    for row in published.summary.itertuples():
        key = (row.platform, row.benchmark, row.config)
        assert row.avg_package_w == pytest.approx(watts[key])
        if row.config != PUBLISHED_BASELINE and key in ppw.index:
            assert row.perf_per_watt_ratio == pytest.approx(ppw[key], abs=0.015), key


def test_published_detail_table_in_changelog_layout(published):
    """The Haswell tbench4 table as the changelog printed it: Hmean +- CoeffVar% (pct%)."""
    table = next(t for t in detail_tables(published, "changelog") if "tbench4" in t.title)
    assert table.headers[:3] == ["statistic", "param", PUBLISHED_BASELINE]
    first = dict(zip(table.headers, table.rows[0]))
    assert first["param"] == "clients=1"
    assert first[PUBLISHED_BASELINE] == "126.73 +- 0.31% (        )"
    assert first["intel_pstate-powersave"].startswith("315.91 +- 0.66% ")
    assert first["intel_pstate-powersave"].endswith(" 149.28%*")
    detail = pd.read_csv(CALIBRATION / "intel-invariance-detail.csv")
    published_rows = detail[detail["benchmark"] == "tbench4"]
    cells = {
        (r["param"], h): c
        for r in map(lambda row: dict(zip(table.headers, row)), table.rows)
        for h, c in r.items()
    }
    for r in published_rows.itertuples():
        assert cells[(r.param, r.config)].startswith(f"{r.value:.2f} +- {r.spread_pct:.2f}%")


def _markdown_tables(text):
    """{title: [header cells, row cells...]} from `### title` headings and pipe tables."""
    tables, title = {}, None
    for line in text.splitlines():
        if line.startswith("### "):
            title = line[4:]
            tables[title] = []
        elif line.startswith("|") and not set(line) <= set("|-: "):
            tables[title].append([c.strip() for c in line.strip("|").split(" | ")])
    return tables


def test_result_columns_are_the_documented_contract():
    assert RESULT_COLUMNS == (
        "platform",
        "benchmark",
        "config",
        "param",
        "iteration",
        "metric_value",
        "metric_unit",
        "better",
        "energy_j",
        "sim_time_s",
        "avg_package_w",
    )
