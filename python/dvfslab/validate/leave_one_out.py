"""Leave-one-machine-out validation: each machine scored with the constants fitted without it.

A campaign's `[cross_validate]` table names the constants fitted on its published cells
(docs/campaign-format.md):

- `fitted_on_one`: per machine, constants fitted on that machine's cells alone (a preset's power
  constants fitted to its watts, a workload cost fitted to its detail table), each with its value
  before the fit. Nothing else says what they should be, so the fold that scores the machine
  takes the value before the fit: what a user would have for a machine without published watts.
- `fitted_on_all`: workload knobs chosen on every machine's cells among a few values. Each fold
  chooses again on the other machines: the value under which their cells of the benchmarks that
  run the workload agree most often (ratio and perf-per-watt directions, power within +-25%),
  from one nominal iteration per value.

Each fold then runs the campaign on its machine alone, as the in-sample run did (variants or
nominal, the same iterations), and the pooled cells of all folds give the cross-validated
scores. With a model discrepancy, each fold's ratio intervals are widened by the one estimated
without that machine of the publication (`dvfslab.validate.calibrated`), and the pooled cells
(`cells` of the result) are what `--fit-discrepancy` takes its residuals from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dvfslab.campaign import variants
from dvfslab.campaign.model import Benchmark, Campaign
from dvfslab.campaign.store import load_results
from dvfslab.report.build import build_report
from dvfslab.validate.calibrated import Discrepancy
from dvfslab.validate.cells import Cell, scores
from dvfslab.validate.published import fill_simulated, published_cells

Runner = Callable[[Campaign, Path], None]
"""Runs a campaign into a results store (the caller's jobs and progress settings)."""

AGREEING_TABLES = ("ratios", "power", "perf-per-watt")
"""The cells a refit counts (the detail tables repeat the ratio cells per parameter)."""


@dataclass(frozen=True)
class Fold:
    """One machine scored in its own fold: the constants it took and its cells (the model's
    intervals, not widened)."""

    platform: str
    constants: dict[str, float]
    cells: list[Cell]


def cross_validate(
    campaign: Campaign, out_dir: Path, run: Runner, discrepancy: Discrepancy | None = None
) -> dict[str, Any]:
    """The folds and the pooled scores, as JSON-ready data; stores under `out_dir`."""
    return cross_validated_result(run_folds(campaign, out_dir, run), discrepancy)


def run_folds(campaign: Campaign, out_dir: Path, run: Runner) -> list[Fold]:
    """Each machine's fold, run into a store under `out_dir`."""
    refits = {
        knob: _agreement_by_value(campaign, knob, values, out_dir / "refit", run)
        for knob, values in campaign.fitted.on_all.items()
    }
    folds = []
    for platform in campaign.platforms:
        constants = dict(campaign.fitted.on_one.get(platform.name, {}))
        for knob, by_value in refits.items():
            constants[knob] = _best_value(by_value, platform.name)
        fold = fold_campaign(campaign, platform.name, constants)
        store = out_dir / platform.name
        run(fold, store)
        folds.append(Fold(platform.name, constants, _scored_cells(fold, store, platform.name)))
    return folds


def cross_validated_result(
    folds: list[Fold], discrepancy: Discrepancy | None = None
) -> dict[str, Any]:
    """Per fold and pooled, the scores (the ratio intervals widened by `discrepancy` when
    given), with the pooled cells (`cells`)."""

    def shown(cells: list[Cell]) -> list[Cell]:
        return discrepancy.widen(cells) if discrepancy is not None else cells

    pooled = [c for f in folds for c in f.cells]
    out: dict[str, Any] = {
        "folds": [
            {"platform": f.platform, "constants": f.constants, **scores(shown(f.cells))}
            for f in folds
        ],
        **scores(shown(pooled)),
    }
    if discrepancy is not None:
        out["discrepancy"] = discrepancy.scores(pooled)
    out["cells"] = [c.to_dict() for c in shown(pooled)]
    return out


def fold_campaign(campaign: Campaign, platform: str, constants: dict[str, float]) -> Campaign:
    """The campaign on `platform` alone, with `constants` (preset pointers and
    'workload:knob's) set."""
    one = campaign.restricted(platforms=[platform])
    preset = {k: v for k, v in constants.items() if k.startswith("/")}
    knobs = {k: v for k, v in constants.items() if not k.startswith("/")}
    target = one.platform(platform)
    platforms = (
        dataclasses.replace(target, preset_json=variants.set_constants(target.preset_json, preset)),
    )
    return dataclasses.replace(
        one, platforms=platforms, benchmarks=tuple(_with(b, knobs) for b in one.benchmarks)
    )


def _with(bench: Benchmark, knobs: dict[str, float]) -> Benchmark:
    """The benchmark with the knobs of its workload among `knobs` ('workload:knob') set."""
    if bench.from_file:
        return bench
    name = bench.workload.split(":", 1)[0]
    mine = {k.split(":", 1)[1]: v for k, v in knobs.items() if k.split(":", 1)[0] == name}
    if not mine:
        return bench
    return dataclasses.replace(bench, workload=variants.with_knobs(bench.workload, mine))


def _agreement_by_value(
    campaign: Campaign, knob: str, values: tuple[float, ...], out_dir: Path, run: Runner
) -> dict[str, dict[float, int]]:
    """Per platform and candidate value of `knob`: the agreeing cells of the benchmarks that
    run its workload, from one nominal iteration."""
    workload = knob.split(":", 1)[0]
    names = [b.name for b in campaign.benchmarks if b.workload.split(":", 1)[0] == workload]
    part = dataclasses.replace(
        campaign.restricted(benchmarks=names),
        nominal=True,
        iterations=1,
    )
    part = dataclasses.replace(
        part,
        benchmarks=tuple(dataclasses.replace(b, iterations=None) for b in part.benchmarks),
    )
    out: dict[str, dict[float, int]] = {p.name: {} for p in campaign.platforms}
    for value in values:
        trial = dataclasses.replace(
            part, benchmarks=tuple(_with(b, {knob: value}) for b in part.benchmarks)
        )
        store = out_dir / f"{knob.replace(':', '-')}={variants.knob_text(value)}"
        run(trial, store)
        for platform in campaign.platforms:
            cells = _scored_cells(trial, store, platform.name)
            out[platform.name][value] = sum(
                1 for c in cells if c.table in AGREEING_TABLES and c.agree
            )
    return out


def _best_value(by_value: dict[str, dict[float, int]], held_out: str) -> float:
    """The value under which the other platforms agree most; the first listed among ties."""
    totals: dict[float, int] = {}
    for platform, counts in by_value.items():
        if platform == held_out:
            continue
        for value, count in counts.items():
            totals[value] = totals.get(value, 0) + count
    return max(totals, key=lambda v: totals[v])


def _scored_cells(campaign: Campaign, store: Path, platform: str) -> list[Cell]:
    """The published cells of `platform` with the store's simulated values."""
    results = load_results(store)
    cells = [c for c in published_cells(campaign.name) if c.machine == platform]
    benchmarks = {b.name for b in campaign.benchmarks}
    cells = [c for c in cells if c.benchmark in benchmarks]
    return fill_simulated(cells, build_report(results, campaign.baseline))
