"""The model discrepancy (dvfslab.report.discrepancy, dvfslab.validate.calibrated): its classes,
the conformal quantile, the widened interval and verdict, the held-out pools and the file."""

from __future__ import annotations

import dataclasses
import json
import math
import random
from pathlib import Path

import pytest

from dvfslab import ConfigError
from dvfslab.report import build_report
from dvfslab.report.discrepancy import (
    ANY_CLASS,
    Residual,
    Residuals,
    benchmark_class,
    conformal_quantile,
    load_residuals,
    shipped_path,
    widened,
    write_residuals,
)
from dvfslab.validate.calibrated import Discrepancy
from dvfslab.validate.cells import Cell, interval_scores

# -- classes -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("workload", "expected"),
    [
        ("pgbench:rw=0,warmup_ms=500", "latency"),
        ("pgbench:rw=1,scale=172", "io"),  # the WAL's flushes
        ("netperf", "latency"),  # TCP_RR by default
        ("netperf:test=udp-stream,warmup_ms=500", "throughput"),
        ("netperf:test=2", "throughput"),
        ("tbench", "latency"),
        ("dbench4:warmup_ms=500", "io"),
        ("kernbench:units=2700", "compile"),
        ("gitsource:commands=1000,work_scale=0", "compile"),
        ("nas:kernel=lu,scale_pct=2", "throughput"),
        ("uibench", "latency"),
        ("rt-app:playback.json", ANY_CLASS),
        ("trace:run.txt", ANY_CLASS),
    ],
)
def test_each_workload_has_the_class_of_what_bounds_its_score(workload, expected):
    assert benchmark_class(workload) == expected


def test_every_classified_model_is_a_workload_of_the_simulator():
    from dvfslab import _core
    from dvfslab.report.discrepancy import BENCHMARK_CLASSES, CLASSES

    models = {w["name"] for w in json.loads(_core.workloads())}
    assert set(BENCHMARK_CLASSES) <= models
    assert set(BENCHMARK_CLASSES.values()) == set(CLASSES)


# -- the quantile and the interval -------------------------------------------------------------


def test_the_conformal_quantile_is_the_rank_of_n_plus_one():
    scores = [i / 10 for i in range(1, 11)]  # 0.1 .. 1.0
    assert conformal_quantile(scores, 0.9) == 1.0  # rank ceil(11 * 0.9) = 10
    assert conformal_quantile(scores[:9], 0.9) == 0.9  # rank 9 of 9
    assert conformal_quantile(scores[:8], 0.9) == math.inf  # rank 9 of 8: too few
    assert conformal_quantile(scores, 0.5) == 0.6  # rank ceil(5.5) = 6
    assert conformal_quantile([], 0.9) == math.inf


def test_a_residual_scores_what_its_interval_left_uncovered():
    assert _residual(0.05, 0.03).score == pytest.approx(0.04)  # 3-4-5 in quadrature
    assert _residual(-0.05, 0.03).score == pytest.approx(0.04)
    assert _residual(0.02, 0.03).score == 0.0  # covered already


def test_the_widened_interval_adds_the_half_widths_in_quadrature():
    lo, hi = widened(1.0, math.exp(-0.03), math.exp(0.03), 0.04)
    assert (math.log(lo), math.log(hi)) == pytest.approx((-0.05, 0.05))
    # Around an asymmetric interval: the larger log side, symmetric after.
    lo, hi = widened(2.0, 2.0 * math.exp(-0.01), 2.0 * math.exp(0.03), 0.04)
    assert (math.log(lo / 2), math.log(hi / 2)) == pytest.approx((-0.05, 0.05))
    # A point interval (answers that do not spread) becomes the discrepancy's.
    lo, hi = widened(1.1, 1.1, 1.1, 0.02)
    assert (lo, hi) == pytest.approx((1.1 * math.exp(-0.02), 1.1 * math.exp(0.02)))
    assert widened(1.1, 1.0, 1.2, math.inf) == (0.0, math.inf)
    assert all(math.isnan(x) for x in widened(1.1, math.nan, math.nan, 0.02))


def test_the_pool_quantile_covers_the_pool_at_its_level():
    """Invariant: the discrepancy of a pool, added to each pool cell's interval, covers at
    least the level's share of the pool's published ratios."""
    rng = random.Random(49)
    for n in (9, 20, 57):
        rows = [_residual(rng.gauss(0, 0.08), abs(rng.gauss(0, 0.03))) for _ in range(n)]
        d = Residuals(tuple(rows)).term("tbench").halfwidth_ln
        covered = 0
        for r in rows:
            published = 1.0
            simulated = published * math.exp(r.ln_error)
            h = r.halfwidth_ln
            lo, hi = widened(simulated, simulated * math.exp(-h), simulated * math.exp(h), d)
            covered += lo - 1e-12 <= published <= hi + 1e-12
        assert covered / n >= 0.9


# -- held-out pools ----------------------------------------------------------------------------


def test_a_cell_is_never_scored_with_its_own_publication_and_machine():
    rows = Residuals(
        (
            _residual(0.30, 0, "pub", "m1", "pgbench-ro", "pgbench:rw=0"),
            _residual(0.05, 0, "pub", "m2", "pgbench-ro", "pgbench:rw=0"),
            _residual(0.04, 0, "pub", "m2", "tbench4", "tbench"),
            _residual(0.03, 0, "other", "m1", "jankbench", "uibench"),
            _residual(0.90, 0, "other", "m1", "kernbench", "kernbench"),  # another class
        ),
        level=0.5,
    )
    # m1's cells of "pub": its own 0.30 and the compile cell are out, 3 latency cells in.
    term = rows.held_out_term("pgbench:rw=0", "pub", "m1")
    assert (term.cells, term.benchmark_class) == (3, "latency")
    assert term.halfwidth_ln == 0.04  # rank ceil(4 * 0.5) = 2 of [0.03, 0.04, 0.05]
    assert term.publications == ("other", "pub")
    # The other publication's machine "m1" is another machine: it stays.
    assert rows.held_out_term("uibench", "other", "m1").cells == 3
    # Leave one benchmark out: every pgbench residual goes too.
    lobo = rows.held_out_term("pgbench:rw=0", "pub", "m1", "pgbench-ro")
    assert lobo.cells == 2
    assert lobo.halfwidth_ln == 0.04  # rank ceil(3 * 0.5) = 2 of [0.03, 0.04]
    assert "pgbench" in lobo.held_out


def test_validation_widens_ratio_cells_with_the_held_out_discrepancy():
    residuals = Residuals(
        (
            *(_residual(x, 0, "other", "m", "b", "tbench") for x in (0.01, 0.02, 0.03, 0.05)),
            _residual(0.5, 0, "pub", "mine", "t", "tbench"),
        ),
        level=0.75,  # rank ceil(5 * 0.75) = 4 of the four "other" cells: 0.05
    )
    d = Discrepancy("pub", residuals, {"t": "tbench"})
    ci = (1.06 * math.exp(-0.03), 1.06 * math.exp(0.03))  # 1.029 .. 1.092: improved
    cell = Cell("ratios", "mine", "t", "", "c", 1.05, simulated=1.06, simulated_ci=ci)
    cell = dataclasses.replace(cell, simulated_verdict="improved")
    assert cell.called_right is True
    assert cell.covered is True
    (wide,) = d.widen([cell])
    assert wide.discrepancy is not None
    assert wide.discrepancy.halfwidth_ln == 0.05  # not its own machine's 0.5
    lo, hi = wide.predicted_ci or (0, 0)
    assert math.log(hi / 1.06) == pytest.approx(math.hypot(0.03, 0.05))
    assert lo < 1.02 < hi
    # The widened interval reaches into the neutral band: the tool no longer calls it.
    assert wide.predicted_verdict == "uncertain"
    assert (wide.called, wide.called_right, wide.covered) == (False, None, True)
    # The model's own interval and verdict stay in the cell.
    assert (wide.simulated_ci, wide.simulated_verdict) == (ci, "improved")
    doc = wide.to_dict()
    assert doc["predicted_verdict"] == "uncertain"
    assert doc["discrepancy"]["halfwidth_ln"] == 0.05
    scores = d.scores([cell])
    assert scores["model_interval"]["called_share"] == 1.0
    assert scores["by_class"]["latency"]["called_share"] == 0.0
    assert interval_scores([wide])["called_share"] == 0.0


def test_residuals_of_a_validation_are_its_simulated_ratio_cells():
    d = Discrepancy("pub", Residuals(()), {"t": "tbench:clients=4"})
    cells = [
        Cell("ratios", "m", "t", "", "c", 1.25, simulated=1.0, simulated_ci=(0.9, 1.1)),
        Cell("ratios", "m", "t", "", "c2", 1.1, simulated=None),  # not run
        Cell("power", "m", "t", "", "c", 30.0, simulated=31.0),
    ]
    (row,) = d.residuals_of(cells)
    assert row.ln_error == pytest.approx(math.log(1 / 1.25))
    assert row.halfwidth_ln == pytest.approx(math.log(1 / 0.9))  # the larger side
    assert (row.publication, row.workload, row.benchmark_class) == (
        "pub",
        "tbench:clients=4",
        "latency",
    )


# -- reports -----------------------------------------------------------------------------------


def test_a_report_widens_its_intervals_and_verdicts_by_each_benchmarks_term(report_results):
    bare = build_report(report_results, "base")
    rows = Residuals(tuple(_residual(0.2, 0, "p", "m", "b", "tbench") for _ in range(9)))
    terms = {"tput": rows.term("tbench")}
    wide = build_report(report_results, "base", discrepancy=terms, discrepancy_source="f.toml")
    b = {(r["benchmark"], r["config"]): r for r in bare.summary.to_dict("records")}
    w = {(r["benchmark"], r["config"]): r for r in wide.summary.to_dict("records")}
    row = w[("tput", "fast")]
    assert b[("tput", "fast")]["verdict"] == "improved"  # 1.1 with a point interval
    assert row["model_verdict"] == "improved"
    assert (row["predicted_ci_low"], row["predicted_ci_high"]) == pytest.approx(
        (1.1 * math.exp(-0.2), 1.1 * math.exp(0.2))
    )
    assert row["verdict"] == "uncertain"
    assert (row["discrepancy_class"], row["discrepancy_ln"]) == ("latency", 0.2)
    # A benchmark without a term keeps the model's interval and verdict.
    other = next(k for k in w if k[0] != "tput" and k[1] != "base")
    assert w[other]["verdict"] == b[other]["verdict"] == w[other]["model_verdict"]
    doc = wide.to_dict()
    assert doc["discrepancy"]["source"] == "f.toml"
    assert doc["discrepancy"]["benchmarks"]["tput"]["class"] == "latency"
    fast = next(r for r in doc["summary"] if (r["benchmark"], r["config"]) == ("tput", "fast"))
    assert fast["predicted_ci"] == pytest.approx([1.1 * math.exp(-0.2), 1.1 * math.exp(0.2)])
    assert bare.to_dict()["discrepancy"] is None


# -- the file ----------------------------------------------------------------------------------


def test_the_file_keeps_every_other_publications_residuals(tmp_path: Path):
    path = tmp_path / "d.toml"
    a = [
        _residual(0.1, 0.02, "a", "m", "x", "tbench"),
        _residual(-0.2, 0.0, "a", "n", "x", "tbench"),
    ]
    write_residuals(path, "a", a, {"command": "dvfslab validate a", "date": "2025-01-01"})
    write_residuals(path, "b", [_residual(0.3, 0.1, "b", "m", 'y "q"', "kernbench")], {})
    back = load_residuals(path)
    assert sorted(back.rows, key=lambda r: r.ln_error) == sorted(
        [*a, _residual(0.3, 0.1, "b", "m", 'y "q"', "kernbench")], key=lambda r: r.ln_error
    )
    assert back.publications is not None
    assert back.publications["a"]["command"] == "dvfslab validate a"
    # Writing "a" again replaces its rows, not b's.
    write_residuals(path, "a", a[:1], {"command": "again"})
    back = load_residuals(path)
    assert [r.publication for r in back.rows].count("a") == 1
    assert [r.publication for r in back.rows].count("b") == 1
    assert back.publications is not None
    assert back.publications["a"]["command"] == "again"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('schema = "other"', r"schema: expected 'dvfslab-discrepancy/1'"),
        (
            'schema = "dvfslab-discrepancy/1"\nresiduals = [{ publication = 1 }]',
            r"residuals\[0\]: publication: expected a string",
        ),
        (
            'schema = "dvfslab-discrepancy/1"\nresiduals = [{ publication = "p", machine = "m",'
            ' benchmark = "b", config = "c", workload = "w", ln_error = 0.1,'
            " halfwidth_ln = -1.0 }]",
            r"residuals\[0\]: halfwidth_ln: expected a finite number >= 0",
        ),
        ("schema = [", "not a discrepancy file"),
    ],
)
def test_a_bad_file_names_the_field(tmp_path: Path, text: str, message: str):
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message) as e:
        load_residuals(path)
    assert str(path) in str(e.value)


def test_a_missing_given_file_is_an_error(tmp_path: Path):
    with pytest.raises(ConfigError, match="no such discrepancy file"):
        load_residuals(tmp_path / "none.toml")


def test_the_shipped_file_reads_and_says_how_it_was_made():
    if not shipped_path().is_file():
        pytest.fail(f"{shipped_path()} is not shipped")
    shipped = load_residuals()
    assert shipped.rows
    assert shipped.publications
    for name, header in shipped.publications.items():
        assert header["command"].startswith(f"dvfslab validate {name}"), name
        assert {"date", "commit", "sim_version", "residuals_from"} <= set(header), name
    assert {r.publication for r in shipped.rows} <= set(shipped.publications)


# -- helpers -----------------------------------------------------------------------------------


def _residual(
    ln_error: float,
    halfwidth: float,
    publication: str = "p",
    machine: str = "m",
    benchmark: str = "b",
    workload: str = "tbench",
) -> Residual:
    return Residual(publication, machine, benchmark, "c", workload, ln_error, halfwidth)


@pytest.fixture
def report_results():
    from report_data import synthetic_results

    return synthetic_results()


# -- the command -------------------------------------------------------------------------------


def test_cli_fits_a_publications_residuals_and_scores_with_the_others(cli, tmp_path: Path):
    from campaign_helpers import TINY_VALIDATION

    campaign = tmp_path / "tiny.toml"  # named intel-invariance, one machine, nothing fitted
    campaign.write_text(TINY_VALIDATION, encoding="utf-8")
    file = tmp_path / "d.toml"
    others = [_residual(0.01 * i, 0.0, "other", "m", "x", "tbench") for i in range(1, 10)]
    write_residuals(file, "other", others, {"command": "dvfslab validate other"})
    args = ["validate", str(campaign), "--iterations", "2", "--out", str(tmp_path / "store")]
    args += ["--jobs", "1", "--quiet", "--discrepancy", str(file)]
    run = cli(*args, "--json", "--fit-discrepancy")
    assert run.code == 0, run.stderr
    assert "2 residuals of intel-invariance written" in run.stderr
    written = load_residuals(file)
    mine = [r for r in written.rows if r.publication == "intel-invariance"]
    assert {(r.benchmark, r.config) for r in mine} == {
        ("tbench4", "schedutil-inv-4c"),
        ("gitsource", "schedutil-inv-4c"),
    }
    assert len(written.rows) == 11  # the other publication's kept
    assert written.publications is not None
    header = written.publications["intel-invariance"]
    assert header["command"] == "dvfslab validate intel-invariance --fit-discrepancy --iterations 2"
    doc = json.loads(run.stdout)
    ratios = [c for c in doc["cells"] if c["table"] == "ratios"]
    assert all(c["discrepancy"] is None for c in ratios if c["simulated"] is None)
    tbench = next(c for c in ratios if c["benchmark"] == "tbench4" and c["simulated"])
    # Scored without its own machine's residual: the nine of the other publication.
    assert tbench["discrepancy"]["cells"] == 9
    assert tbench["discrepancy"]["halfwidth_ln"] == pytest.approx(0.09)
    lo, hi = tbench["simulated_ci"]
    wide_lo, wide_hi = tbench["predicted_ci"]
    assert wide_lo < lo <= hi < wide_hi
    gitsource = next(c for c in ratios if c["benchmark"] == "gitsource" and c["simulated"])
    # No compile residual but its own: the interval is unbounded, the verdict uncertain.
    assert gitsource["discrepancy"]["cells"] == 0
    assert gitsource["predicted_ci"][1] is None
    assert gitsource["predicted_verdict"] == "uncertain"
    assert doc["discrepancy"]["benchmark_classes"] == {"tbench4": "latency", "gitsource": "compile"}
    assert (
        doc["discrepancy"]["model_interval"].keys()
        == doc["discrepancy"]["benchmark_held_out"].keys()
    )

    bare = cli(*args, "--json", "--no-discrepancy")
    assert bare.code == 0, bare.stderr
    bare_doc = json.loads(bare.stdout)
    assert "discrepancy" not in bare_doc
    for key in ("coverage", "called_share", "confident_direction_agreement"):
        assert bare_doc[key] == doc["discrepancy"]["model_interval"][key]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--nominal"], "--fit-discrepancy cannot go with --nominal"),
        (["--platform", "pixel6"], "--fit-discrepancy cannot go with --platform"),
        ([], "--fit-discrepancy on intel-invariance needs --cross-validate"),
    ],
)
def test_cli_refuses_residuals_that_would_not_be_out_of_sample(cli, tmp_path, extra, message):
    run = cli("validate", "intel-invariance", "--fit-discrepancy", "--out", str(tmp_path), *extra)
    assert run.code != 0
    assert message in run.stderr
    assert not (tmp_path / "runs").exists()  # refused before running anything
