"""A publication's ratio cells with the model discrepancy added to their intervals, the scores
of the widened intervals, and the residuals a validation contributes to the discrepancy file.

The discrepancy a cell is scored with never rests on the cell's own publication and machine:
for a publication of several machines it comes from its other machines (leave one machine out)
and the other publications, for a publication of one machine from the other publications alone
(leave one publication out). The scores are also given with the cell's workload model left out
of the pool (leave one benchmark out: a benchmark the model was never compared with) and for
the model's interval alone (`dvfslab.report.discrepancy` has the method).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dvfslab.report.discrepancy import CLASSES, Residual, Residuals, Term, benchmark_class
from dvfslab.validate.cells import Cell, interval_scores


@dataclass(frozen=True)
class Discrepancy:
    """The discrepancy residuals, as publication `publication` is scored with them."""

    publication: str
    residuals: Residuals
    workloads: Mapping[str, str]
    """Each benchmark's workload spec (the campaign's), which decides its class."""

    def workload(self, benchmark: str) -> str:
        return self.workloads.get(benchmark, benchmark)

    def term(self, cell: Cell, leave_benchmark_out: bool = False) -> Term:
        """The cell's discrepancy, without its own machine of this publication (and with
        `leave_benchmark_out`, without every residual of its workload model)."""
        return self.residuals.held_out_term(
            self.workload(cell.benchmark),
            self.publication,
            cell.machine,
            cell.benchmark if leave_benchmark_out else None,
        )

    def widen(self, cells: list[Cell], leave_benchmark_out: bool = False) -> list[Cell]:
        """The cells, each simulated ratio cell with its discrepancy."""
        return [
            dataclasses.replace(c, discrepancy=self.term(c, leave_benchmark_out))
            if c.table == "ratios" and c.simulated is not None
            else c
            for c in cells
        ]

    def scores(self, cells: list[Cell]) -> dict[str, Any]:
        """What the JSON's `discrepancy` holds: the file, each class's discrepancy over all its
        residuals, and the interval scores of the model's interval alone, of the widened one
        per class and with the benchmark left out too."""
        bare = [dataclasses.replace(c, discrepancy=None) for c in cells]
        wide = self.widen(bare)
        by_class = {
            cls: [c for c in wide if c.discrepancy and c.discrepancy.benchmark_class == cls]
            for cls in CLASSES
        }
        return {
            "source": self.residuals.source,
            "level": self.residuals.level,
            "held_out": "each cell's machine of this publication (leave one machine out; "
            "the whole publication when it has one machine)",
            "classes": self.residuals.class_summary(),
            "benchmark_classes": {
                b: benchmark_class(self.workload(b))
                for b in dict.fromkeys(
                    c.benchmark for c in cells if c.table == "ratios" and c.simulated is not None
                )
            },
            "model_interval": interval_scores(bare),
            "benchmark_held_out": interval_scores(self.widen(bare, leave_benchmark_out=True)),
            "by_class": {cls: interval_scores(mine) for cls, mine in by_class.items() if mine},
        }

    def residuals_of(self, cells: list[Cell]) -> list[Residual]:
        """The publication's residual rows: each simulated ratio cell's log error and its model
        interval's log half-width (0 without an interval)."""
        out = []
        for c in cells:
            if c.table != "ratios" or c.simulated is None or not c.simulated > 0:
                continue
            if not (math.isfinite(c.simulated) and c.published > 0):
                continue
            half = 0.0
            if c.simulated_ci is not None:
                lo, hi = c.simulated_ci
                half = max(math.log(hi / c.simulated), math.log(c.simulated / lo), 0.0)
            out.append(
                Residual(
                    self.publication,
                    c.machine,
                    c.benchmark,
                    c.config,
                    self.workload(c.benchmark),
                    math.log(c.simulated / c.published),
                    half,
                )
            )
        return out
