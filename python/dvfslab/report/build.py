"""Comparison reports: a campaign's results table, turned into the comparison kernel engineers read.

Input is one row per run (`RESULT_COLUMNS`) and the name of the baseline configuration. Output
is a `Report`: a `summary` DataFrame (one row per platform, benchmark and configuration: the
ratio to the baseline as a geometric mean over parameters, its interval, power, performance per
watt, a verdict) and a `detail` DataFrame (one row per platform, benchmark, parameter and
configuration: MMTests' statistics, percentage difference and significance). docs/report-json.md
documents both as JSON; `dvfslab.report.tables` lays them out as tables and
`dvfslab.report.exporters` writes them in each format.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from dvfslab._core import ConfigError
from dvfslab.report import stats
from dvfslab.report.discrepancy import Term, widened

if TYPE_CHECKING:
    from collections.abc import Mapping

    import pandas as pd

REPORT_SCHEMA = "dvfslab-report/2"
RESULT_COLUMNS = (
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


@dataclass(frozen=True)
class RunCounts:
    """How many of the runs a report should rest on it has: a campaign stopped half-way leaves
    fewer, and cells (platform, benchmark, config, param) without all their iterations."""

    finished: int
    expected: int
    incomplete: tuple[dict[str, Any], ...] = ()
    """Each cell missing runs: platform, benchmark, config, param, finished, expected."""

    CELLS_NAMED: ClassVar[int] = 10

    @property
    def complete(self) -> bool:
        return self.finished >= self.expected and not self.incomplete

    def describe(self) -> str:
        """One line: "incomplete: 39 of 144 runs finished; 5 cells lack runs: ..."."""
        cells = [
            f"{c['platform']} {c['benchmark']} {c['config']}"
            f"{' ' + c['param'] if c['param'] else ''} ({c['finished']} of {c['expected']})"
            for c in self.incomplete[: self.CELLS_NAMED]
        ]
        more = len(self.incomplete) - len(cells)
        listed = ", ".join(cells) + (f" and {more} more" if more > 0 else "")
        return (
            f"incomplete: {self.finished} of {self.expected} runs finished; "
            f"{len(self.incomplete)} cell{'s' if len(self.incomplete) != 1 else ''} lack runs: "
            f"{listed}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "finished": self.finished,
            "expected": self.expected,
            "incomplete": [dict(c) for c in self.incomplete],
        }


@dataclass(frozen=True)
class Report:
    """A comparison of every configuration with `baseline`, per platform and benchmark.

    `runs`, when known (a report of a results store), counts the runs it rests on against
    those the campaign has."""

    baseline: str
    summary: pd.DataFrame
    detail: pd.DataFrame
    significance: stats.SignificanceMethod = "ci"
    level: float = stats.INTERVAL_LEVEL
    neutral_band: float = stats.NEUTRAL_BAND
    runs: RunCounts | None = None
    discrepancy: dict[str, Any] | None = None
    """How the intervals were widened (`build_report`'s `discrepancy`): the file and, per
    benchmark, its term; None for the model's intervals alone."""

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (schema "dvfslab-report/2"); NaN becomes None."""
        summary = []
        for row in self.summary.to_dict("records"):
            row["perf_ratio_ci"] = [row["perf_ratio_ci_low"], row["perf_ratio_ci_high"]]
            row["predicted_ci"] = [row["predicted_ci_low"], row["predicted_ci_high"]]
            summary.append({k: row[k] for k in SUMMARY_JSON})
        detail = [{k: row[k] for k in DETAIL_COLUMNS} for row in self.detail.to_dict("records")]
        clean: dict[str, Any] = _json_clean(
            {
                "schema": REPORT_SCHEMA,
                "baseline": self.baseline,
                "significance": self.significance,
                "level": self.level,
                "neutral_band": self.neutral_band,
                "runs": self.runs.to_dict() if self.runs is not None else None,
                "discrepancy": self.discrepancy,
                "summary": summary,
                "detail": detail,
            }
        )
        return clean

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


# -- building ------------------------------------------------------------------------------------


def build_report(
    results: pd.DataFrame,
    baseline: str,
    *,
    significance: stats.SignificanceMethod = "ci",
    level: float = stats.INTERVAL_LEVEL,
    neutral_band: float = stats.NEUTRAL_BAND,
    discrepancy: Mapping[str, Term] | None = None,
    discrepancy_source: str = "",
) -> Report:
    """Compare every configuration in `results` with `baseline`.

    results:      one row per run, with the columns of RESULT_COLUMNS
    baseline:     the configuration every other is compared with, on each platform
    significance: "ci" (MMTests since 2024: mean +- 1.96 sd bands apart) or "ttest" (before),
                  for the per-parameter detail rows
    level:        of the ratio intervals over the iterations (the model variants)
    neutral_band: a ratio whose interval lies within 1 +- this is neutral (`stats.verdict`)
    discrepancy:  per benchmark, the model-discrepancy term its ratios' intervals are widened by
                  (`dvfslab.report.discrepancy`); the verdict is then the widened interval's.
                  None, or a benchmark not in it: the model's interval alone.
    discrepancy_source: the file the terms come from, for the report's `discrepancy` field

    Raises ConfigError when a column is missing, `better` is not higher/lower, a benchmark mixes
    directions or units, or the baseline has no runs for a platform and benchmark.
    """
    import pandas as pd

    if significance not in stats.SIGNIFICANCE_METHODS:
        methods = " or ".join(repr(m) for m in stats.SIGNIFICANCE_METHODS)
        raise ConfigError(f"significance must be {methods} (got {significance!r})")
    df = _checked_results(results, baseline)
    detail: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    for (platform, benchmark), runs in df.groupby(["platform", "benchmark"], sort=False):
        group = _Group(str(platform), str(benchmark), runs, baseline)
        detail += group.detail_rows(significance)
        term = discrepancy.get(str(benchmark)) if discrepancy is not None else None
        summary += group.summary_rows(level, neutral_band, term)
    used = None
    if discrepancy is not None:
        used = {
            "source": discrepancy_source,
            "benchmarks": {name: t.to_dict() for name, t in discrepancy.items()},
        }
    return Report(
        baseline=baseline,
        summary=pd.DataFrame(summary, columns=list(SUMMARY_COLUMNS)),
        detail=pd.DataFrame(detail, columns=list(DETAIL_COLUMNS)),
        significance=significance,
        level=level,
        neutral_band=neutral_band,
        discrepancy=used,
    )


SUMMARY_COLUMNS = (
    "platform",
    "benchmark",
    "metric_unit",
    "better",
    "config",
    "baseline",
    "params",
    "perf_ratio",
    "perf_ratio_ci_low",
    "perf_ratio_ci_high",
    "perf_per_watt_ratio",
    "avg_package_w",
    "verdict",
    "discrepancy_class",
    "discrepancy_ln",
    "predicted_ci_low",
    "predicted_ci_high",
    "model_verdict",
)
# The JSON has each interval as one [low, high] field.
SUMMARY_JSON = tuple(
    {"perf_ratio_ci_low": "perf_ratio_ci", "predicted_ci_low": "predicted_ci"}.get(c, c)
    for c in SUMMARY_COLUMNS
    if c not in ("perf_ratio_ci_high", "predicted_ci_high")
)
DETAIL_COLUMNS = (
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
)


class _Group:
    """One platform and benchmark: its configurations, parameters and samples."""

    def __init__(self, platform: str, benchmark: str, runs: pd.DataFrame, baseline: str) -> None:
        self.platform, self.benchmark, self.baseline = platform, benchmark, baseline
        self.better = _one_value(runs, "better", platform, benchmark)
        self.unit = _one_value(runs, "metric_unit", platform, benchmark)
        configs = list(dict.fromkeys(runs["config"]))
        if baseline not in configs:
            raise ConfigError(
                f"baseline {baseline!r} has no runs for {platform} {benchmark} "
                f"(configurations there: {', '.join(configs)})"
            )
        self.configs = [baseline] + [c for c in configs if c != baseline]
        self.params = sorted(dict.fromkeys(runs["param"]), key=_natural_key)
        ordered = runs.sort_values("iteration", kind="stable")
        self.cells = {key: cell for key, cell in ordered.groupby(["config", "param"], sort=False)}
        self.runs = runs

    def samples(self, config: str, param: str) -> list[float] | None:
        cell = self.cells.get((config, param))
        return None if cell is None else [float(x) for x in cell["metric_value"]]

    def detail_rows(self, method: stats.SignificanceMethod) -> list[dict[str, Any]]:
        rows = []
        for param in self.params:
            base = self.samples(self.baseline, param)
            base_mean = stats.mean_for(base, self.better) if base else math.nan
            for config in self.configs:
                xs = self.samples(config, param)
                if xs is None:
                    continue
                s = stats.summarise(xs, self.better)
                cell = self.cells[(config, param)]
                sig = (
                    stats.significance(base, xs, self.better, method)
                    if base is not None and config != self.baseline
                    else None
                )
                rows.append(
                    {
                        "platform": self.platform,
                        "benchmark": self.benchmark,
                        "param": param,
                        "metric_unit": self.unit,
                        "better": self.better,
                        "config": config,
                        "baseline": self.baseline,
                        "mean_kind": s.kind,
                        "n": s.n,
                        "mean": s.mean,
                        "stddev": s.stddev,
                        "coeffvar": s.coeffvar,
                        "min": s.min,
                        "max": s.max,
                        "pct_diff": stats.pct_diff(base_mean, s.mean, self.better),
                        "significant": sig is not None and sig.significant,
                        "significance_score": sig.score if sig is not None else math.nan,
                        "ratio": stats.ratio(s.mean, base_mean) if base else math.nan,
                        "avg_package_w": float(cell["avg_package_w"].mean()),
                        "energy_j": float(cell["energy_j"].mean()),
                    }
                )
        return rows

    def summary_rows(
        self, level: float, neutral_band: float, term: Term | None = None
    ) -> list[dict[str, Any]]:
        base_w = self.avg_package_w(self.baseline)
        rows = []
        for config in self.configs:
            pairs = []
            for param in self.params:
                base, new = self.samples(self.baseline, param), self.samples(config, param)
                if base and new:
                    pairs.append((base, new))
            is_baseline = config == self.baseline
            r = stats.summary_ratio(pairs, self.better, level)
            if is_baseline:  # exactly 1 by definition, not a comparison with itself
                r = stats.RatioSummary(1.0, 1.0, 1.0, tuple(1.0 for _ in pairs))
            power_w = self.avg_package_w(config)
            model_verdict = stats.verdict(r.ci_low, r.ci_high, self.better, neutral_band)
            predicted = (r.ci_low, r.ci_high)
            if term is not None and not is_baseline:
                predicted = widened(r.ratio, r.ci_low, r.ci_high, term.halfwidth_ln)
            rows.append(
                {
                    "platform": self.platform,
                    "benchmark": self.benchmark,
                    "metric_unit": self.unit,
                    "better": self.better,
                    "config": config,
                    "baseline": self.baseline,
                    "params": len(pairs),
                    "perf_ratio": r.ratio,
                    "perf_ratio_ci_low": r.ci_low,
                    "perf_ratio_ci_high": r.ci_high,
                    "perf_per_watt_ratio": stats.perf_per_watt_ratio(
                        r.ratio, self.better, base_w, power_w
                    ),
                    "avg_package_w": power_w,
                    "verdict": (
                        "baseline"
                        if is_baseline
                        else stats.verdict(*predicted, self.better, neutral_band)
                    ),
                    "discrepancy_class": term.benchmark_class if term is not None else None,
                    "discrepancy_ln": (
                        term.halfwidth_ln
                        if term is not None and math.isfinite(term.halfwidth_ln)
                        else None
                    ),
                    "predicted_ci_low": predicted[0],
                    "predicted_ci_high": predicted[1],
                    "model_verdict": "baseline" if is_baseline else model_verdict,
                }
            )
        return rows

    def avg_package_w(self, config: str) -> float:
        """Average package power over all the configuration's runs, weighted by their length
        (what turbostat sampling over the whole benchmark measures)."""
        runs = self.runs[self.runs["config"] == config]
        seconds = runs["sim_time_s"].astype(float)
        watts = runs["avg_package_w"].astype(float)
        total = float(seconds.sum())
        if total > 0 and math.isfinite(total):
            return float((watts * seconds).sum()) / total
        return float(watts.mean())


def _checked_results(results: pd.DataFrame, baseline: str) -> pd.DataFrame:
    missing = [c for c in RESULT_COLUMNS if c not in results.columns]
    if missing:
        raise ConfigError(
            f"results table lacks column(s) {', '.join(missing)} "
            f"(a report needs {', '.join(RESULT_COLUMNS)})"
        )
    if results.empty:
        raise ConfigError("results table has no runs: nothing to report")
    bad = sorted(set(map(str, results["better"])) - {"higher", "lower"})
    if bad:
        raise ConfigError(f"column better must hold 'higher' or 'lower' (found {bad})")
    configs = set(results["config"])
    if baseline not in configs:
        raise ConfigError(
            f"baseline {baseline!r} is not a configuration of these results "
            f"(there are: {', '.join(sorted(map(str, configs)))})"
        )
    import pandas as pd

    df = results.copy()
    for column in ("platform", "benchmark", "config", "param", "metric_unit", "better"):
        df[column] = df[column].astype(str)
    for column in ("iteration", "metric_value", "energy_j", "sim_time_s", "avg_package_w"):
        try:
            df[column] = pd.to_numeric(df[column])
        except (TypeError, ValueError) as e:
            raise ConfigError(f"column {column} must hold numbers ({e})") from None
    return df


def _one_value(runs: pd.DataFrame, column: str, platform: str, benchmark: str) -> str:
    values = list(dict.fromkeys(runs[column]))
    if len(values) != 1:
        raise ConfigError(
            f"{platform} {benchmark}: runs disagree on {column} ({', '.join(values)}); "
            "a benchmark has one metric"
        )
    return str(values[0])


def _natural_key(text: str) -> tuple[tuple[int, float, str], ...]:
    """Sort key putting "clients=8" before "clients=16": numbers compare as numbers."""
    parts = re.split(r"(\d+(?:\.\d+)?)", text)
    return tuple((1, float(p), "") if i % 2 else (0, 0.0, p) for i, p in enumerate(parts) if p)


def _json_clean(value: Any) -> Any:
    """NaN and infinities to None, numpy scalars to Python ones, recursively."""
    if isinstance(value, dict):
        return {k: _json_clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
