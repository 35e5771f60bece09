"""Validation against published measurements: run a campaign, then compare every published cell
with the simulated one.

    dvfslab validate intel-invariance [--json] [--iterations N] [--out DIR] [--jobs N]

The published numbers ship in dvfslab/data/calibration/ as four CSVs per campaign (see the README
there): `<name>-ratios.csv` (result / baseline per machine, benchmark and configuration, a gmean
over parameters, `neutral=1` where the publication printed `~`), `<name>-power-watts.csv`
(average package power), `<name>-perf-per-watt-ratios.csv` and `<name>-detail.csv` (per-parameter
values). Each becomes a list of `Cell`s, one per published number, with the simulated value from
`dvfslab.report.build_report` beside it.

Modules: `cells` (a published cell beside its simulated value, and the scores over them),
`published` (the shipped numbers as cells, and `validate_report`), `views` (text and Markdown),
`diff` (what changed between two validations), `leave_one_out` (each machine scored with the
constants fitted without it) and `power_fit` (the presets' power constants fitted to published
watts).
"""

from dvfslab.validate.cells import Cell, scores
from dvfslab.validate.published import (
    VALIDATE_SCHEMA,
    calibration_names,
    fill_simulated,
    published_cells,
    published_power,
    validate_report,
)
from dvfslab.validate.views import print_validation, print_validation_markdown

__all__ = [
    "VALIDATE_SCHEMA",
    "Cell",
    "calibration_names",
    "fill_simulated",
    "print_validation",
    "print_validation_markdown",
    "published_cells",
    "published_power",
    "scores",
    "validate_report",
]
