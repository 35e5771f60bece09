"""Fit a preset's package-power constants to published package watts.

Per run, the package power the simulator reports is linear in four preset constants:

    P = p_uncore_active_w * active + p_uncore_dyn_w * clock + p_pkg_idle_w * idle + k * cores

summed over the packages, where `active` is the share of the run some core of a package was not
power-gated, `clock` the uncore clock's level (0..1) integrated over that share, `idle` the
rest, and `cores` the cores' own watts, which scale with `c_eff_nf` and `p_leak_ref_mw`
together (k = 1 keeps them as they are).

`fit_power` pools each published (machine, benchmark, config) cell's runs, weighted by run time
as the published averages are, and minimises the sum of absolute relative errors (iteratively
reweighted least squares, each constant kept >= 0, the `HELD` ones as they are): a few cells
whose simulated activity is far off (a mechanism missing in a benchmark model) then cannot drag
the constants of a whole machine. A constant whose term is negligible in every cell of a
machine (a package that never idles, say) keeps its preset value. Package idle power must stay
below the active uncore's static power (an idle package draws less than one with a core
awake); a fit that breaks this is trading idle power against the rest to absorb activity
errors, and is redone with the preset's idle power. Core power feeds back into performance
only through the turbo power limit, so one refit after applying the constants confirms the
fixed point.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dvfslab.platforms import load_platform, preset_values

CONSTANTS = ("p_uncore_active_w", "p_uncore_dyn_w", "p_pkg_idle_w", "core_scale")
"""The constants of the model; `core_scale` multiplies `c_eff_nf` and `p_leak_ref_mw`."""

HELD = ("p_uncore_dyn_w",)
"""Constants kept at the preset's value. The uncore clock share rises with frequency as core
power does, so the two are nearly collinear in these benchmarks: freed, the fit moves watts
from the cores to the uncore clock and the invariant configurations' extra power grows beyond
the published (Haswell: 17 of 37 perf-per-watt directions against 19 held)."""

IDLE = CONSTANTS.index("p_pkg_idle_w")
ACTIVE = CONSTANTS.index("p_uncore_active_w")

NEGLIGIBLE_SHARE = 0.02
"""A term below this share of every cell's power is not fitted."""

IRLS_ROUNDS = 50
"""Reweighting rounds of the absolute-error fit (it settles within a few dozen)."""

IRLS_FLOOR = 0.01
"""Relative errors below 1% count as 1% when reweighting (keeps the weights finite)."""


@dataclass(frozen=True)
class PowerFit:
    platform: str
    cells: int
    preset: dict[str, float]
    fitted: dict[str, float]
    within_25pct_before: float
    within_25pct_after: float
    median_abs_ln_before: float
    median_abs_ln_after: float

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def power_terms(run_json: str) -> tuple[float, float, float, float]:
    """(active, clock, idle, core watts) of one run, each a time average over the run."""
    run = json.loads(run_json)
    secs = run["sim_time_s"]
    if secs <= 0:
        return (0.0, 0.0, 0.0, 0.0)
    packages = run["packages"]
    idle = sum(p["idle_s"] for p in packages)
    clock = sum(p["uncore_clock_s"] for p in packages)
    uncore_j = sum(p["uncore_energy_j"] for p in packages)
    active = len(packages) * secs - idle
    return (active / secs, clock / secs, idle / secs, (run["energy_j"] - uncore_j) / secs)


def cell_terms(results: pd.DataFrame) -> pd.DataFrame:
    """Run-time weighted terms per (platform, benchmark, config)."""
    terms = pd.DataFrame(
        [power_terms(js) for js in results["run_json"]],
        columns=["active", "clock", "idle", "cores"],
        index=results.index,
    )
    weighted = terms.mul(results["sim_time_s"], axis=0)
    weighted[["platform", "benchmark", "config"]] = results[["platform", "benchmark", "config"]]
    weighted["time"] = results["sim_time_s"]
    pooled = weighted.groupby(["platform", "benchmark", "config"]).sum().reset_index()
    for col in ("active", "clock", "idle", "cores"):
        pooled[col] /= pooled["time"]
    return pooled.drop(columns="time")


def preset_constants(platform: str) -> dict[str, float]:
    pp = preset_values(json.loads(load_platform(platform)[0]))["package_power"]
    return {
        "p_uncore_active_w": float(pp["p_uncore_active_w"]),
        "p_uncore_dyn_w": float(pp.get("p_uncore_dyn_w", 0.0)),
        "p_pkg_idle_w": float(pp["p_pkg_idle_w"]),
        "core_scale": 1.0,
    }


def _nonnegative_lstsq(a: np.ndarray, b: np.ndarray, free: list[int]) -> dict[int, float]:
    """Least squares over columns `free` with every coefficient >= 0 (active set)."""
    free = list(free)
    while free:
        coef, *_ = np.linalg.lstsq(a[:, free], b, rcond=None)
        negative = [f for f, c in zip(free, coef) if c < 0]
        if not negative:
            return dict(zip(free, coef.tolist()))
        free.remove(negative[0])
    return {}


def _least_absolute(a: np.ndarray, b: np.ndarray, free: list[int]) -> dict[int, float]:
    """Minimise sum |a x - b| over columns `free` with x >= 0, by reweighted least squares."""
    weights = np.ones(len(b))
    solved: dict[int, float] = {}
    for _ in range(IRLS_ROUNDS):
        root = np.sqrt(weights)[:, None]
        solved = _nonnegative_lstsq(a * root, b * root[:, 0], free)
        x = np.zeros(a.shape[1])
        for j, v in solved.items():
            x[j] = v
        weights = 1.0 / np.maximum(np.abs(a @ x - b), IRLS_FLOOR)
    return solved


def _scores(predicted: np.ndarray, published: np.ndarray) -> tuple[float, float]:
    ratio = predicted / published
    return float(np.mean(np.abs(ratio - 1) <= 0.25)), float(np.median(np.abs(np.log(ratio))))


def _fit_free(a: np.ndarray, start: np.ndarray, free: list[int]) -> np.ndarray:
    """The constants with columns `free` fitted (relative rows `a`, target 1) and the rest
    at `start`; a free constant the non-negative fit drops is 0."""
    held = [j for j in range(len(start)) if j not in free]
    target = np.ones(a.shape[0]) - a[:, held] @ start[held]
    solved = _least_absolute(a, target, free)
    return np.array([solved.get(j, 0.0) if j in free else start[j] for j in range(len(start))])


def fit_platform(platform: str, cells: pd.DataFrame) -> PowerFit:
    """Fit one platform's constants. `cells` has the terms and a `published` watts column."""
    preset = preset_constants(platform)
    x = cells[["active", "clock", "idle", "cores"]].to_numpy(dtype=float)
    watts = cells["published"].to_numpy(dtype=float)
    start = np.array([preset[c] for c in CONSTANTS])
    # Relative errors: each row divided by its published watts, target 1.
    a = x / watts[:, None]
    share = np.abs(a * np.where(start > 0, start, 1.0))
    free = [
        j
        for j, c in enumerate(CONSTANTS)
        if c not in HELD and share[:, j].max() >= NEGLIGIBLE_SHARE
    ]
    theta = _fit_free(a, start, free)
    if theta[IDLE] >= theta[ACTIVE] and IDLE in free:
        theta = _fit_free(a, start, [j for j in free if j != IDLE])
    fitted = {c: float(theta[j]) for j, c in enumerate(CONSTANTS)}
    within_before, ln_before = _scores(x @ start, watts)
    within_after, ln_after = _scores(x @ theta, watts)
    return PowerFit(
        platform=platform,
        cells=len(watts),
        preset=preset,
        fitted={k: round(v, 3) for k, v in fitted.items()},
        within_25pct_before=within_before,
        within_25pct_after=within_after,
        median_abs_ln_before=ln_before,
        median_abs_ln_after=ln_after,
    )


def fit_power(results: pd.DataFrame, published: pd.DataFrame) -> list[PowerFit]:
    """One fit per platform present in both the results and the published power table
    (columns machine, benchmark, config, package_watts)."""
    terms = cell_terms(results)
    pub = published.rename(columns={"machine": "platform", "package_watts": "published"})
    merged = terms.merge(pub, on=["platform", "benchmark", "config"])
    return [fit_platform(str(p), group) for p, group in merged.groupby("platform", sort=True)]


def print_fits(fits: list[PowerFit]) -> None:
    for fit in fits:
        print(f"{fit.platform} ({fit.cells} power cells)")
        for c in CONSTANTS:
            print(f"  {c:<18} {fit.preset[c]:>9.3f} -> {fit.fitted[c]:>9.3f}")
        print(
            f"  within +-25%: {fit.within_25pct_before:.2f} -> {fit.within_25pct_after:.2f}"
            f"   median |ln error|: {fit.median_abs_ln_before:.3f} -> {fit.median_abs_ln_after:.3f}"
        )
