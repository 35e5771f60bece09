"""`dvfslab validate`: the published cells, the scores, the JSON and the command end to end.

The end-to-end test runs a tiny stand-in for the intel-invariance campaign (one platform, two
configurations, two short benchmarks, one iteration): the full campaign takes minutes.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

import dvfslab
from campaign_helpers import TINY_VALIDATION as TINY
from dvfslab.campaign import load_campaign, load_results
from dvfslab.report import build_report
from dvfslab.validate.cells import (
    PER_PARAMETER,
    Cell,
    direction,
    direction_agreement,
    median_abs_ln_error,
    scores,
)
from dvfslab.validate.published import calibration_names, published_cells

TOP_KEYS = {
    "direction_agreement",
    "median_abs_ln_error",
    "power_within_25pct",
    "ppw_direction_agreement",
    "cells",
}
CELL_KEYS = {"table", "machine", "benchmark", "param", "config", "published", "simulated", "agree"}


def ratio_cell(published: float, simulated: float | None, better: str = "higher", neutral=False):
    return Cell("ratios", "m", "b", "", "c", published, better, neutral, simulated=simulated)


def power_cell(published: float, simulated: float | None) -> Cell:
    return Cell("power", "m", "b", "", "c", published, "lower", simulated=simulated)


# -- scoring ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ratio", "better", "neutral", "expected"),
    [
        (1.10, "higher", False, "improved"),
        (1.10, "lower", False, "regressed"),
        (0.90, "lower", False, "improved"),
        (0.90, "higher", False, "regressed"),
        (1.02, "higher", False, "neutral"),  # within +-2%
        (0.98, "lower", False, "neutral"),
        (1.03, "higher", False, "improved"),
        (1.50, "higher", True, "neutral"),  # the publication's `~` wins
    ],
)
def test_direction(ratio, better, neutral, expected):
    assert direction(ratio, better, neutral) == expected


def test_direction_agreement_handles_neutral_cells():
    cells = [
        ratio_cell(1.00, 1.01, neutral=True),  # ~ vs within 2%: agree
        ratio_cell(1.00, 1.10, neutral=True),  # ~ vs improved: disagree
        ratio_cell(1.14, 1.05),  # both improved: agree
        ratio_cell(0.83, 0.99, better="lower"),  # improved vs neutral: disagree
        ratio_cell(1.23, 1.30, better="lower"),  # both regressed: agree
        ratio_cell(1.05, None),  # not simulated: not judged
    ]
    assert [c.agree for c in cells] == [True, False, True, False, True, None]
    assert direction_agreement(cells) == pytest.approx(3 / 5)


@pytest.mark.parametrize(
    ("published", "ci", "verdict", "neutral", "covered", "called_right"),
    [
        (1.03, (1.015, 1.035), "uncertain", False, True, None),  # straddles the band's edge
        (1.00, (1.08, 1.12), "improved", True, False, False),  # wholly improved: the model's miss
        (1.06, (1.03, 1.09), "improved", False, True, True),
        (0.95, (0.99, 1.01), "neutral", False, False, False),
        (1.01, (0.99, 1.01), "neutral", False, True, True),
    ],
)
def test_interval_scores_of_a_ratio_cell(published, ci, verdict, neutral, covered, called_right):
    cell = dataclasses.replace(
        ratio_cell(published, (ci[0] + ci[1]) / 2, neutral=neutral),
        simulated_ci=ci,
        simulated_verdict=verdict,
    )
    assert cell.covered is covered
    assert cell.called is (verdict != "uncertain")
    assert cell.called_right is called_right
    assert cell.to_dict()["simulated_ci"] == list(ci)
    got = scores([cell])
    assert got["coverage"] == float(covered)
    assert got["called_share"] == float(verdict != "uncertain")
    assert got["confident_direction_agreement"] == (
        None if called_right is None else float(called_right)
    )
    assert got["median_ci_halfwidth"] == pytest.approx((ci[1] - ci[0]) / 2)


def test_interval_scores_without_intervals_judge_nothing():
    got = scores([ratio_cell(1.0, 1.05)])
    assert got["coverage"] is None
    assert got["called_share"] is None
    assert got["median_ci_halfwidth"] is None


def test_median_abs_ln_error():
    cells = [
        ratio_cell(1.0, 1.0),
        ratio_cell(1.0, math.e),
        ratio_cell(2.0, 1.0),
        ratio_cell(1.0, None),
    ]
    assert median_abs_ln_error(cells) == pytest.approx(math.log(2.0))
    assert median_abs_ln_error([ratio_cell(1.0, None)]) is None


def test_power_within_25_percent():
    cells = [
        power_cell(100.0, 125.0),  # the edge is inside
        power_cell(100.0, 75.0),
        power_cell(100.0, 126.0),
        power_cell(100.0, 50.0),
        power_cell(100.0, None),
    ]
    assert [c.agree for c in cells] == [True, True, False, False, None]
    s = scores(cells)
    assert s["power_within_25pct"] == pytest.approx(0.5)
    assert s["direction_agreement"] is None  # no ratio cells
    assert s["judged"]["power"] == 4


def test_detail_cells_compare_the_ratio_to_the_baseline():
    cell = Cell(
        "detail", "m", "kernbench", "jobs=2", "c", 285.9, "lower", simulated=40.0,
        published_ratio=0.75, simulated_ratio=0.9,
    )  # fmt: skip
    assert cell.agree is True
    assert cell.to_dict()["published_ratio"] == 0.75


# -- publication noise -----------------------------------------------------------------------


def detail_cell(ratio: float, simulated_ratio: float, spread=None, reference=False) -> Cell:
    return Cell(
        "detail", "m", "b", "x=1", "c", 100.0 * ratio, "higher", simulated=1.0,
        published_ratio=ratio, simulated_ratio=simulated_ratio, spread_pct=spread,
        reference=reference,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("published", "spread", "direction_", "noise_neutral"),
    [
        (1.05, 5.0, "neutral", True),  # +5% within its +-5%: the edge is inside
        (1.05, 4.9, "improved", False),
        (0.90, 12.0, "neutral", True),
        (0.90, None, "regressed", False),  # no spread published: as before
        (1.01, 5.0, "neutral", False),  # within +-2% already: not counted as removed
        (1.30, 5.0, "improved", False),
    ],
)
def test_a_published_ratio_within_its_noise_is_neutral(
    published, spread, direction_, noise_neutral
):
    ratio = dataclasses.replace(ratio_cell(published, 1.0), spread_pct=spread)
    detail = detail_cell(published, 1.0, spread)
    for cell in (ratio, detail):
        assert cell.published_direction == direction_
        assert cell.noise_neutral is noise_neutral
        assert cell.to_dict()["noise_neutral"] is noise_neutral
        # The simulation says neutral (1.0): it agrees exactly when the published one is.
        assert cell.agree is (direction_ == "neutral")


def test_scores_count_the_cells_the_noise_makes_neutral():
    cells = [
        detail_cell(1.05, 1.10, spread=6.0),  # noise-neutral: the simulated 1.10 now misses
        detail_cell(1.05, 1.10),  # no spread: both improved
        detail_cell(1.00, 1.00, spread=6.0, reference=True),  # the baseline itself
        dataclasses.replace(ratio_cell(0.97, 1.0), spread_pct=4.0),  # noise-neutral, agrees
        dataclasses.replace(ratio_cell(1.00, 1.0), spread_pct=4.0),  # neutral anyway
    ]
    got = scores(cells)
    assert got["noise_neutral"] == {"ratios": 1, "perf-per-watt": 0, "detail": 1, "energy": 0}
    assert got["direction_agreement"] == 1.0
    assert got["detail_direction_agreement"] == 0.5
    assert got["judged"]["detail"] == 2  # the baseline's own value is not judged
    assert got["published"]["detail"] == 3


def test_called_cells_are_judged_against_the_noisy_direction():
    cell = dataclasses.replace(
        ratio_cell(1.04, 1.04), spread_pct=5.0, simulated_ci=(1.03, 1.05),
        simulated_verdict="improved",
    )  # fmt: skip
    assert cell.published_direction == "neutral"
    assert cell.called_right is False
    assert cell.covered is True


def test_detail_spreads_combine_in_quadrature():
    # Juno-r2's heterogeneous tasks: 15 tasks +2.66% with EAS, inside the two runs' confidence
    # intervals (1.32 J of 20.06 and 1.00 J of 20.60); 3 tasks -12.8%, outside theirs.
    cells = {(c.benchmark, c.config): c for c in published_cells("eas-juno-r2")}
    fifteen = cells[("heterogeneous-15", "eas")]
    assert fifteen.table == "energy"
    assert fifteen.quantity == "energy"
    assert fifteen.published_ratio == pytest.approx(20.60 / 20.06)
    assert fifteen.spread_pct == pytest.approx(math.hypot(6.58, 4.85))
    assert fifteen.noise_neutral
    three = cells[("heterogeneous-3", "eas")]
    assert three.published_direction == "improved"  # less energy
    assert not three.noise_neutral
    assert cells[("heterogeneous-3", "no-eas")].reference
    assert cells[("heterogeneous-3", "no-eas")].spread_pct is None


def test_ratio_spreads_are_read_where_published():
    cells = published_cells("i7-2600k-process-chains")
    spreads = {(c.benchmark, c.config): c.spread_pct for c in cells if c.table == "ratios"}
    assert spreads[("pids-null", "performance")] == pytest.approx(2.32)
    assert spreads[("pids-work", "performance")] is None


# -- published cells -------------------------------------------------------------------------


def test_calibration_ships_inside_the_package():
    # Each campaign once, though two of intel-invariance's tables end in "-ratios.csv", and
    # eas-juno-r2 has an energy table alone.
    assert calibration_names() == [
        "amd-invariance-regression",
        "eas-juno-r2",
        "i7-2600k-process-chains",
        "intel-invariance",
        "runnable-boosting-pixel6",
    ]
    cells = published_cells("intel-invariance")
    tables = {c.table for c in cells}
    assert tables == {"ratios", "power", "perf-per-watt", "detail"}
    gitsource = [c for c in cells if c.table == "detail" and c.benchmark == "gitsource"]
    assert {c.param for c in gitsource} == {""}  # "none" is the campaign's no-sweep param
    tb = next(
        c
        for c in cells
        if c.table == "detail" and c.param == "clients=1" and c.config == "intel_pstate-powersave"
    )
    assert tb.published_ratio == pytest.approx(315.91 / 126.73)


@pytest.mark.parametrize("jobs", [2, 160])
def test_kernbench_work_reproduces_the_elapsed_it_was_calibrated_on(jobs):
    # estimates::kernbench's cc1 work, startup and link are fitted to these two published cells
    # (docs/validation.md, "Calibrated constants"): a change to the build's costs, or to how the
    # scheduler runs it, that moves either by more than 5% means the fit must be redone.
    published = next(
        c.published
        for c in published_cells("intel-invariance")
        if c.table == "detail"
        and c.benchmark == "kernbench"
        and c.param == f"jobs={jobs}"
        and c.config == "schedutil-inv-4c"
    )
    campaign = load_campaign("intel-invariance")
    governor = next(c.governor for c in campaign.configs if c.name == "schedutil-inv-4c")
    workload = f"kernbench:units=2700,jobs={jobs}"
    result = dvfslab.simulate("broadwell-e5-2698v4-2s", governor, workload, seed=1)
    assert result.metric.value == pytest.approx(published, rel=0.05)


def test_desktop_kernbench_is_level_between_baseline_and_invariant_schedutil():
    # The publication has the desktop's kernbench neutral under every configuration, while its
    # gitsource (a chain of short processes) takes 0.55 of the baseline's time under invariance:
    # the build's serial startup cannot be such a chain (estimates::kernbench::START_PROCS).
    campaign = load_campaign("intel-invariance")
    governor = {c.name: c.governor for c in campaign.configs}
    elapsed = {
        name: dvfslab.simulate(
            "skylake-e3-1240v5", governor[name], "kernbench:units=2700,jobs=16", seed=1
        ).metric.value
        for name in ("baseline-schedutil-noninv", "schedutil-inv-4c")
    }
    ratio = elapsed["schedutil-inv-4c"] / elapsed["baseline-schedutil-noninv"]
    assert ratio == pytest.approx(1.0, abs=0.02)


@pytest.mark.parametrize("name", calibration_names())
def test_shipped_campaign_covers_every_published_cell(name):
    campaign = load_campaign(name)
    runs = {(r.platform, r.benchmark, r.config, r.param) for r in campaign.runs()}
    summary = {(p, b, c) for p, b, c, _ in runs}
    cells = published_cells(name)
    assert cells
    for cell in cells:
        if cell.table in PER_PARAMETER:
            assert (cell.machine, cell.benchmark, cell.config, cell.param) in runs, cell
            # A per-parameter table's ratios are to its first configuration, which must be the
            # campaign's baseline, as the simulated ratios are.
            assert cell.reference == (cell.config == campaign.baseline), cell
            assert cell.published_ratio is not None, cell
        else:
            assert (cell.machine, cell.benchmark, cell.config) in summary, cell
        assert cell.config in {c.name for c in campaign.configs}, cell
    assert campaign.iterations >= 5


# -- the command -----------------------------------------------------------------------------


def test_cli_end_to_end_json(cli, tmp_path: Path):
    campaign = tmp_path / "tiny.toml"
    campaign.write_text(TINY, encoding="utf-8")
    out = tmp_path / "store"
    args = ["validate", str(campaign), "--iterations", "1", "--out", str(out), "--jobs", "1"]
    run = cli(*args, "--json", "--quiet")
    assert run.code == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc.keys() >= TOP_KEYS
    for key in ("direction_agreement", "power_within_25pct", "ppw_direction_agreement"):
        assert 0.0 <= doc[key] <= 1.0
    assert doc["median_abs_ln_error"] >= 0.0
    assert all(cell.keys() >= CELL_KEYS for cell in doc["cells"])
    simulated = [c for c in doc["cells"] if c["simulated"] is not None]
    # Skylake: tbench4 and gitsource, ratios, power and ppw for both configs; detail: gitsource.
    assert {(c["table"], c["benchmark"]) for c in simulated} == {
        (t, b) for t in ("ratios", "power", "perf-per-watt") for b in ("tbench4", "gitsource")
    } | {("detail", "gitsource")}
    assert all(c["machine"] == "skylake-e3-1240v5" for c in simulated)
    assert doc["judged"]["ratios"] == 2  # inv-4c on two benchmarks
    # One iteration: no interval, so the model cannot tell.
    for cell in (c for c in simulated if c["table"] == "ratios"):
        assert cell["simulated_ci"] is None
        assert cell["simulated_verdict"] == "uncertain"
    assert (doc["coverage"], doc["called_share"]) == (None, 0.0)
    # --iterations 1 ran one iteration per point, not the file's 5.
    assert len(list((out / "runs").glob("*.parquet"))) == 2 * (2 + 1)

    # Run again as text: every run is reused from the store.
    text = cli(*args)
    assert text.code == 0, text.stderr
    assert "6 already stored" in text.stdout
    assert "direction_agreement" in text.stdout
    assert "power_within_25pct" in text.stdout


def test_cli_says_what_it_does_before_it_runs(cli, tmp_path: Path):
    campaign = tmp_path / "tiny.toml"
    campaign.write_text(TINY, encoding="utf-8")
    args = ["validate", str(campaign), "--iterations", "1", "--out", str(tmp_path / "store")]
    run = cli(*args, "--benchmark", "gitsource", "--jobs", "1")
    assert run.code == 0, run.stderr
    # Without a terminal, a line per phase on stderr: the check of each distinct setup first
    # (seconds for a shipped campaign), then the runs.
    assert run.stderr.splitlines() == [
        "intel-invariance: checking the 2 distinct (platform, governor, workload) setups "
        "of 2 runs to run",
        "intel-invariance: 2/2 setups checked in 0:00:00",
        "intel-invariance: 2 runs to run",
        "intel-invariance: 2/2 runs in 0:00:00",
    ]


def test_cli_markdown_shows_every_simulated_cell_and_marks_the_misses(cli, tmp_path: Path):
    campaign = tmp_path / "tiny.toml"
    campaign.write_text(TINY, encoding="utf-8")
    args = ["validate", str(campaign), "--iterations", "1", "--out", str(tmp_path / "s")]
    doc = json.loads(cli(*args, "--jobs", "1", "--json", "--quiet").stdout)
    run = cli(*args, "--markdown", "--quiet")
    assert run.code == 0, run.stderr
    text = run.stdout
    assert "### skylake-e3-1240v5" in text
    assert f"| direction_agreement | {doc['direction_agreement']:.3f} |" in text
    simulated = [c for c in doc["cells"] if c["simulated"] is not None]
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    for cell in (c for c in simulated if c["table"] != "detail"):
        shown = f"{cell['published']:.2f} → {cell['simulated']:.2f}"
        if cell["table"] == "power" and cell["simulated"] >= 100:
            shown = f"{cell['published']:.2f} → {cell['simulated']:.1f}"
        (row,) = [r for r in rows if r.startswith(f"| {cell['benchmark']} |") and shown in r]
        marked = row.split(shown, 1)[1].split("|", 1)[0]
        assert ("✗" in marked) == (cell["agree"] is False), (cell, row)
    # One ✗ per disagreeing cell, detail cells included.
    assert text.count("✗") == sum(c["agree"] is False for c in simulated)
    # --json and --markdown are two views of one result: asking for both is an error.
    both = cli(*args, "--json", "--markdown")
    assert both.code == 1
    assert "--markdown: not allowed with argument --json" in both.stderr


def test_cli_validates_a_part_of_the_campaign(cli, tmp_path: Path):
    campaign = tmp_path / "tiny.toml"
    campaign.write_text(TINY, encoding="utf-8")
    out = tmp_path / "store"
    base = ["validate", str(campaign), "--iterations", "1", "--out", str(out), "--jobs", "1"]
    run = cli(*base, "--benchmark", "gitsource", "--json", "--quiet")
    assert run.code == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["only"] == {"benchmarks": ["gitsource"]}
    # Only gitsource was run (one point, two configs) and only its cells are listed.
    assert len(list((out / "runs").glob("*.parquet"))) == 2
    assert {c["benchmark"] for c in doc["cells"]} == {"gitsource"}
    assert doc["judged"]["ratios"] == 1
    run_configs = {"baseline-schedutil-noninv", "schedutil-inv-4c"}
    ran = [
        c
        for c in doc["cells"]
        if c["machine"] == "skylake-e3-1240v5" and c["config"] in run_configs
    ]
    assert ran
    assert all(c["simulated"] is not None for c in ran)

    # The whole campaign afterwards reuses gitsource's runs and scores every benchmark again.
    whole = cli(*base, "--json", "--quiet")
    assert whole.code == 0, whole.stderr
    assert "only" not in json.loads(whole.stdout)
    assert json.loads(whole.stdout)["judged"]["ratios"] == 2
    assert len(list((out / "runs").glob("*.parquet"))) == 6


@pytest.mark.parametrize(
    ("flag", "name", "expected"),
    [
        ("--benchmark", "dbench", "no benchmark dbench (expected one of: tbench4, gitsource)"),
        ("--platform", "pixel6", "no platform pixel6 (expected one of: skylake-e3-1240v5)"),
    ],
)
def test_cli_part_names_must_be_the_campaigns(cli, tmp_path: Path, flag, name, expected):
    campaign = tmp_path / "tiny.toml"
    campaign.write_text(TINY, encoding="utf-8")
    run = cli("validate", str(campaign), flag, name, "--out", str(tmp_path / "s"))
    assert run.code == 1
    assert expected in run.stderr
    assert not (tmp_path / "s").exists()


def test_cli_refuses_a_campaign_without_published_numbers(cli, tmp_path: Path):
    campaign = tmp_path / "other.toml"
    campaign.write_text(TINY.replace('"intel-invariance"', '"other"'), encoding="utf-8")
    run = cli("validate", str(campaign), "--out", str(tmp_path / "s"))
    assert run.code == 1
    assert "no published measurements for campaign 'other'" in run.stderr
    assert not (tmp_path / "s").exists()


def test_cli_scores_energy_cells_by_their_simulated_ratio(cli, tmp_path: Path):
    # runnable-boosting-pixel6 publishes the CPUs' power under each configuration: its energy
    # table compares the ratio of the simulated average package powers.
    out = tmp_path / "store"
    args = ["validate", "runnable-boosting-pixel6", "--iterations", "1", "--out", str(out)]
    run = cli(*args, "--jobs", "1", "--json", "--quiet")
    assert run.code == 0, run.stderr
    doc = json.loads(run.stdout)
    energy = {c["config"]: c for c in doc["cells"] if c["table"] == "energy"}
    assert set(energy) == {"base", "runnable"}
    assert energy["base"]["reference"]
    assert energy["base"]["agree"] is None
    report = build_report(load_results(out), "base")
    watts = {r["config"]: r["avg_package_w"] for r in report.detail.to_dict("records")}
    assert energy["runnable"]["simulated"] == pytest.approx(watts["runnable"])
    assert energy["runnable"]["simulated_ratio"] == pytest.approx(watts["runnable"] / watts["base"])
    assert energy["runnable"]["published_ratio"] == pytest.approx(0.1343 / 0.1295)
    assert energy["runnable"]["agree"] == (energy["runnable"]["simulated_ratio"] > 1.02)
    assert doc["judged"]["energy"] == 1
    assert doc["energy_direction_agreement"] == float(energy["runnable"]["agree"])


def test_validate_has_help_with_examples(cli):
    run = cli("validate", "--help")
    assert run.code == 0
    assert "dvfslab validate intel-invariance" in run.stdout
