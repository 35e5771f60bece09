"""A published number beside its simulated counterpart (`Cell`), and the scores over a
campaign's cells.

Scores (`scores`):
    direction_agreement      ratio cells whose direction (improved / regressed / neutral) is the
                             published one; neutral = the publication's `~`, within +-2%, or
                             within the published ratio's own noise (below)
    median_abs_ln_error      median over ratio cells of |ln(simulated / published)|
    power_within_25pct       power cells whose simulated watts are within +-25% of the published
    ppw_direction_agreement  as direction_agreement, over the perf-per-watt cells
    detail_direction_agreement  per-parameter ratios to the baseline with the published direction
    energy_direction_agreement  energy (or power) ratios to the baseline with the published
                             direction, per parameter
Cells without a simulated value (a platform or configuration not run) count in no score, nor do
the detail and energy cells of the baseline itself (their ratio is 1 by definition).

**Publication noise.** A published ratio carries its own spread where the publication gave one
(`spread_pct`: the ratio's for the ratio tables; each value's for the detail and energy tables,
the value's and its baseline's combined in quadrature). A ratio within its spread of 1.0 is
neutral for scoring, as the publication's `~` is: `noise_neutral` counts, per table, the cells
whose published direction that turns to neutral (those already within +-2% or printed `~` are
not counted).

Each simulated ratio also carries its 90% interval over the iterations, which are model variants
unless the campaign ran `--nominal` (`simulated_ci`, the report's interval of the gmean ratio),
and the report's verdict on it (`simulated_verdict`: improved, regressed, neutral or uncertain).
A ratio cell may also carry the model discrepancy of its benchmark class
(`dvfslab.report.discrepancy`, estimated without the cell's own publication and machine):
`predicted_ci` is then the model's interval widened by it, `predicted_verdict` that interval's
verdict; without one they are the model's own. The scores of the intervals, over the ratio
cells, are those of the predicted interval and verdict:
    coverage                       published ratios inside the predicted 90% interval
    called_share                   cells with a verdict other than uncertain
    confident_direction_agreement  called cells whose verdict is the published direction
    median_ci_halfwidth            median of (high - low) / 2 of the intervals
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Literal, get_args

from dvfslab.report.discrepancy import Term, widened
from dvfslab.report.stats import NEUTRAL_BAND, verdict

POWER_TOLERANCE = 0.25
"""A simulated power within +-25% of the published one agrees."""

TableName = Literal["ratios", "power", "perf-per-watt", "detail", "energy"]
TABLES: tuple[TableName, ...] = get_args(TableName)
"""The published tables, in the order the views show them."""
PER_PARAMETER: tuple[TableName, ...] = ("detail", "energy")
"""The tables of per-parameter values, compared by their ratio to the baseline's value."""
Direction = Literal["improved", "regressed", "neutral"]


@dataclass(frozen=True)
class Cell:
    """One published number and its simulated counterpart."""

    table: TableName
    machine: str
    benchmark: str
    param: str
    """The sweep point for detail cells ("clients=8"; "" for none), "" for the others."""
    config: str
    published: float
    better: str = "higher"
    """Of the published quantity: perf ratios follow the benchmark, ppw is always higher."""
    neutral: bool = False
    """The publication printed `~`."""
    unit: str = ""
    simulated: float | None = None
    published_ratio: float | None = None
    """Detail cells: the published value over the baseline's at the same parameter."""
    simulated_ratio: float | None = None
    simulated_ci: tuple[float, float] | None = None
    """Ratio cells: the 90% interval of the simulated ratio over the iterations."""
    simulated_verdict: str | None = None
    """Ratio cells: improved / regressed / neutral / uncertain (`dvfslab.report.stats.verdict`)."""
    spread_pct: float | None = None
    """The published ratio's noise in % of the ratio (ratios and perf-per-watt: as published;
    detail and energy: the value's and the baseline value's spreads combined in quadrature);
    None where the publication gave none."""
    reference: bool = False
    """Detail and energy cells: a value of the baseline itself (its ratio is 1 by definition)."""
    quantity: str = ""
    """Energy cells: `energy` (J over the run) or `power` (average W)."""
    discrepancy: Term | None = None
    """Ratio cells: the model discrepancy its interval is widened by; None for none."""

    @property
    def predicted_ci(self) -> tuple[float, float] | None:
        """Ratio cells: the model's interval widened by the discrepancy (the model's alone
        without one; None, unknown, when the model has no interval, as with one iteration)."""
        if self.table != "ratios" or self.discrepancy is None or self.simulated is None:
            return self.simulated_ci
        if self.simulated_ci is None:
            return None
        lo, hi = widened(self.simulated, *self.simulated_ci, self.discrepancy.halfwidth_ln)
        return None if math.isnan(lo) or math.isnan(hi) else (lo, hi)

    @property
    def predicted_verdict(self) -> str | None:
        """Ratio cells: the verdict of `predicted_ci` (`dvfslab.report.stats.verdict`)."""
        if self.table != "ratios" or self.discrepancy is None:
            return self.simulated_verdict
        ci = self.predicted_ci
        if ci is None:
            return self.simulated_verdict
        return verdict(ci[0], ci[1], self.better)

    @property
    def published_to_baseline(self) -> float | None:
        """The published ratio to the baseline this cell's direction is read from: the value of
        ratio and perf-per-watt cells, the ratio to the baseline's value of detail and energy
        cells; None for power cells."""
        if self.table == "power":
            return None
        if self.table in PER_PARAMETER:
            return self.published_ratio
        return self.published

    @property
    def within_noise(self) -> bool:
        """Is the published ratio within its own spread of 1.0?"""
        ratio = self.published_to_baseline
        if ratio is None or self.spread_pct is None:
            return False
        return abs(ratio - 1.0) <= self.spread_pct / 100.0 + 1e-12

    @property
    def published_direction(self) -> Direction | None:
        """The direction the publication reports: neutral where it printed `~`, within +-2%, or
        within its own noise. None for power cells and detail cells without a baseline value."""
        ratio = self.published_to_baseline
        if ratio is None:
            return None
        return direction(ratio, self.better, self.neutral or self.within_noise)

    @property
    def noise_neutral(self) -> bool:
        """Neutral only because of the published ratio's noise (else improved or regressed)."""
        ratio = self.published_to_baseline
        if ratio is None or not self.within_noise:
            return False
        return direction(ratio, self.better, self.neutral) != "neutral"

    @property
    def agree(self) -> bool | None:
        """Does the simulation agree with the publication on this cell? None: not simulated.

        ratios and perf-per-watt: same direction; power: within +-25%; detail and energy: the
        per-parameter ratio to the baseline has the same direction (absolute values of
        scaled-down benchmarks are not comparable), except for the baseline's own values. The
        published direction counts the publication's noise (`published_direction`).
        """
        if self.simulated is None or not math.isfinite(self.simulated):
            return None
        if self.table == "power":
            return power_agrees(self.published, self.simulated)
        if self.table in PER_PARAMETER:
            if self.reference or self.simulated_ratio is None:
                return None
            if not math.isfinite(self.simulated_ratio):
                return None
            simulated = self.simulated_ratio
        else:
            simulated = self.simulated
        published = self.published_direction
        if published is None:
            return None
        return published == direction(simulated, self.better)

    @property
    def covered(self) -> bool | None:
        """Ratio cells: is the published ratio inside the predicted interval? None: no interval."""
        ci = self.predicted_ci
        if self.table != "ratios" or ci is None:
            return None
        lo, hi = ci
        return lo - 1e-12 <= self.published <= hi + 1e-12

    @property
    def called(self) -> bool | None:
        """Ratio cells: did the simulation give a verdict other than uncertain? None: no verdict."""
        if self.table != "ratios" or self.predicted_verdict is None:
            return None
        return self.predicted_verdict != "uncertain"

    @property
    def called_right(self) -> bool | None:
        """Called ratio cells: is the verdict the published direction? None: not called."""
        if not self.called:
            return None
        return self.predicted_verdict == self.published_direction

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "table": self.table,
            "machine": self.machine,
            "benchmark": self.benchmark,
            "param": self.param,
            "config": self.config,
            "published": self.published,
            "simulated": _finite_or_none(self.simulated),
            "agree": self.agree,
            "better": self.better,
            "neutral": self.neutral,
        }
        if self.table != "power":
            out["spread_pct"] = self.spread_pct
            out["noise_neutral"] = self.noise_neutral
        if self.table in PER_PARAMETER:
            out["unit"] = self.unit
            out["reference"] = self.reference
            out["published_ratio"] = _finite_or_none(self.published_ratio)
            out["simulated_ratio"] = _finite_or_none(self.simulated_ratio)
        if self.table == "energy":
            out["quantity"] = self.quantity
        if self.table == "ratios":
            out["simulated_ci"] = list(self.simulated_ci) if self.simulated_ci else None
            out["simulated_verdict"] = self.simulated_verdict
            out["discrepancy"] = self.discrepancy.to_dict() if self.discrepancy else None
            predicted = self.predicted_ci
            out["predicted_ci"] = [_finite_or_none(x) for x in predicted] if predicted else None
            out["predicted_verdict"] = self.predicted_verdict
            out["covered"] = self.covered
        return out


# -- scoring -------------------------------------------------------------------------------------


def direction(
    ratio: float, better: str, neutral: bool = False, band: float = NEUTRAL_BAND
) -> Direction:
    """improved / regressed / neutral for a ratio result/baseline.

    Neutral when flagged (the publication's `~`) or within 1 +- band; otherwise improved when the
    ratio moved the way `better` ("higher" or "lower") prefers.
    """
    if neutral or abs(ratio - 1.0) <= band + 1e-9:
        return "neutral"
    return "improved" if (ratio > 1.0) == (better == "higher") else "regressed"


def power_agrees(published: float, simulated: float, tolerance: float = POWER_TOLERANCE) -> bool:
    return published > 0 and abs(simulated / published - 1.0) <= tolerance + 1e-12


def direction_agreement(cells: list[Cell]) -> float | None:
    """Share of the simulated cells that agree (each cell's own rule); None if none simulated."""
    return share([c.agree for c in cells])


def median_abs_ln_error(cells: list[Cell]) -> float | None:
    """Median over the simulated cells of |ln(simulated / published)|."""
    errors = [
        abs(math.log(c.simulated / c.published))
        for c in cells
        if c.simulated is not None and c.simulated > 0 and c.published > 0
    ]
    return statistics.median(errors) if errors else None


def share(flags: list[bool | None]) -> float | None:
    """The share of True among the flags that are not None; None when all are."""
    judged = [f for f in flags if f is not None]
    return sum(judged) / len(judged) if judged else None


def interval_scores(cells: list[Cell]) -> dict[str, Any]:
    """The scores of the ratio cells' predicted intervals and verdicts (see the module
    docstring)."""
    ratios = [c for c in cells if c.table == "ratios" and c.simulated is not None]
    intervals = [c.predicted_ci for c in ratios]
    halves = [(ci[1] - ci[0]) / 2 for ci in intervals if ci and math.isfinite(ci[1] - ci[0])]
    return {
        "coverage": share([c.covered for c in ratios]),
        "called_share": share([c.called for c in ratios]),
        "confident_direction_agreement": share([c.called_right for c in ratios]),
        "median_ci_halfwidth": statistics.median(halves) if halves else None,
    }


def scores(cells: list[Cell]) -> dict[str, Any]:
    """The headline scores and how many cells each one judged."""
    by = {t: [c for c in cells if c.table == t] for t in TABLES}
    return {
        **interval_scores(cells),
        "direction_agreement": direction_agreement(by["ratios"]),
        "median_abs_ln_error": median_abs_ln_error(by["ratios"]),
        "power_within_25pct": direction_agreement(by["power"]),
        "ppw_direction_agreement": direction_agreement(by["perf-per-watt"]),
        "detail_direction_agreement": direction_agreement(by["detail"]),
        "energy_direction_agreement": direction_agreement(by["energy"]),
        "power_median_abs_ln_error": median_abs_ln_error(by["power"]),
        "judged": {t: sum(c.agree is not None for c in by[t]) for t in TABLES},
        "published": {t: len(by[t]) for t in TABLES},
        "noise_neutral": {t: sum(c.noise_neutral for c in by[t]) for t in TABLES if t != "power"},
    }


def _finite_or_none(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None
