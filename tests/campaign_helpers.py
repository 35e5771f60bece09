"""Small campaigns for the campaign and store tests, written as TOML files."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

SMALL = "skylake-e3-1240v5"

# 1 platform x 2 configs x 2 params x 2 iterations = 8 runs of 0.2 s: well under a second.
TINY: dict[str, Any] = {
    "name": "tiny",
    "platforms": [SMALL],
    "baseline": "schedutil",
    "seed": 7,
    "iterations": 2,
    "duration_s": 0.2,
    "configs": {"schedutil": "schedutil", "performance": "performance"},
    "benchmarks": {
        "periodic": {
            "workload": "periodic:run_us=1000,period_us=8000,jitter_pct=20",
            "sweep": {"threads": [1, 2]},
        }
    },
}
TINY_RUNS = 8

# A stand-in for intel-invariance with published cells to score: one platform, two
# configurations, two short benchmarks (`dvfslab validate`'s tests).
TINY_VALIDATION = """
name = "intel-invariance"
platforms = ["skylake-e3-1240v5"]
baseline = "baseline-schedutil-noninv"
iterations = 5

[configs]
baseline-schedutil-noninv = "schedutil:invariant=0,kernel=5.2,driver=intel_cpufreq"
schedutil-inv-4c = "schedutil:invariant=1,freq_max=4c,kernel=5.2,driver=intel_cpufreq"

[benchmarks]
tbench4 = { workload = "tbench", sweep = { clients = [1, 2] }, duration_s = 0.05 }
gitsource = { workload = "gitsource:commands=200" }
"""

# Runs of ~20-50 ms each (6 or 8 threads waking every 2 ms for 10 simulated seconds): long
# enough that a pool of two has both workers busy, and that a campaign can be killed half-way.
SLOW: dict[str, Any] = {
    "name": "slow",
    "platforms": [SMALL],
    "baseline": "schedutil",
    "seed": 3,
    "iterations": 6,
    "duration_s": 10.0,
    "configs": {"schedutil": "schedutil", "performance": "performance"},
    "benchmarks": {
        "periodic": {
            "workload": "periodic:run_us=1000,period_us=2000,jitter_pct=20",
            "sweep": {"threads": [6, 8]},
        }
    },
}


def campaign_doc(base: dict[str, Any] = TINY, **changes: Any) -> dict[str, Any]:
    """A deep copy of `base` with top-level keys replaced (a value of None removes the key)."""
    doc = copy.deepcopy(base)
    for key, value in changes.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    return doc


def write_campaign(path: Path, doc: dict[str, Any]) -> Path:
    """Write `doc` as a TOML campaign file (tables inline) and return its path."""
    lines = [f"{_key(k)} = {_value(v)}" for k, v in doc.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(type(value))
