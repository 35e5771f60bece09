"""Results tables for the report tests: a small synthetic campaign with known answers, and the
published intel-invariance detail table turned back into samples.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

CALIBRATION = Path(__file__).parent / "data" / "calibration"
BASELINE = "base"
PUBLISHED_BASELINE = "baseline-schedutil-noninv"

# Per benchmark: direction, unit, {param: baseline samples (4 iterations)}.
BENCHMARKS = {
    "tput": (
        "higher",
        "MB/s",
        # Listed out of order: the report sorts parameters naturally (2 before 16).
        {"clients=16": [198, 202, 198, 202], "clients=2": [99, 101, 99, 101]},
    ),
    "elapsed": ("lower", "s", {"jobs=2": [49, 51, 49, 51], "jobs=16": [19.8, 20.2, 19.8, 20.2]}),
}
# Per configuration: what it does to the metric (per direction) and its package power.
CONFIGS = {
    BASELINE: ({"higher": 1.0, "lower": 1.0}, 100.0),
    "fast": ({"higher": 1.10, "lower": 0.90}, 120.0),
    "slow": ({"higher": 0.80, "lower": 1.25}, 80.0),
    "same": ({"higher": 1.001, "lower": 1.001}, 100.0),
}


def synthetic_results(platforms: tuple[str, ...] = ("box",)) -> pd.DataFrame:
    """Every configuration's samples are the baseline's scaled by one factor: known ratios.

    elapsed is a fixed-work benchmark: its run lasts as long as its metric says.
    """
    rows = []
    for platform in platforms:
        for benchmark, (better, unit, params) in BENCHMARKS.items():
            for config, (factor, watts) in CONFIGS.items():
                for param, samples in params.items():
                    for i, x in enumerate(samples):
                        value = x * factor[better]
                        seconds = value if benchmark == "elapsed" else 60.0
                        rows.append(
                            {
                                "platform": platform,
                                "benchmark": benchmark,
                                "config": config,
                                "param": param,
                                "iteration": i,
                                "metric_value": value,
                                "metric_unit": unit,
                                "better": better,
                                "energy_j": watts * seconds,
                                "sim_time_s": seconds,
                                "avg_package_w": watts,
                            }
                        )
    return pd.DataFrame(rows)


def published_results(samples: int = 4) -> pd.DataFrame:
    """The published detail table (Haswell tbench4, Broadwell kernbench, Skylake gitsource) as
    samples whose Hmean/Amean and CoeffVar are exactly the published value and spread, at the
    published average package power.

    Hmean rows: reciprocals 1/H * (1 +- c), so H is exact and HStddev/H = c. Amean rows:
    A +- c * A * sqrt((n - 1) / n), so the sample standard deviation is c * A.
    """
    detail = pd.read_csv(CALIBRATION / "intel-invariance-detail.csv")
    power = pd.read_csv(CALIBRATION / "intel-invariance-power-watts.csv").set_index(
        ["machine", "benchmark", "config"]
    )["package_watts"]
    signs = [(-1) ** i for i in range(samples)]
    rows = []
    for r in detail.itertuples():
        c = 0.0 if math.isnan(r.spread_pct) else r.spread_pct / 100
        if r.better == "higher":
            xs = [1 / ((1 / r.value) * (1 + s * c)) for s in signs]
        else:
            e = c * r.value * math.sqrt((samples - 1) / samples)
            xs = [r.value + s * e for s in signs]
        watts = float(power[(r.machine, r.benchmark, r.config)])
        for i, x in enumerate(xs):
            rows.append(
                {
                    "platform": r.machine,
                    "benchmark": r.benchmark,
                    "config": r.config,
                    "param": r.param,
                    "iteration": i,
                    "metric_value": x,
                    "metric_unit": r.unit.split()[0],
                    "better": r.better,
                    "energy_j": watts * 100,
                    "sim_time_s": 100.0,
                    "avg_package_w": watts,
                }
            )
    return pd.DataFrame(rows)
