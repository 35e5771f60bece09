"""What changed between two validations of one campaign: every score before and after, and the
published cells whose verdict changed or whose simulated value moved.

    dvfslab validate intel-invariance --json > before.json
    ... change a model constant or mechanism ...
    dvfslab validate intel-invariance --against before.json

This is the record a calibration step needs (its commit message keeps one per experiment): what
the change bought, what it cost, and which cells crossed the line. A value "moved" when it
changed by more than `MOVED`, the width of the neutral band, so that a cell listed as moved may
have changed its verdict under another reading. Cells present in only one of the two (a partial
validation) are counted, not compared, and a score the earlier validation did not have yet shows
as missing.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any, TextIO

from dvfslab._core import ConfigError
from dvfslab.report.printing import print_markdown_table, print_table
from dvfslab.validate.published import VALIDATE_SCHEMA
from dvfslab.validate.views import SCORE_ROWS, fmt_value

MOVED = 0.02
"""A simulated value that changed by more than this share moved."""

SCORE_KEYS: tuple[str, ...] = tuple(key for key, _, _ in SCORE_ROWS)
_CELL_KEY = ("table", "machine", "benchmark", "param", "config")


def load_validation(path: str | Path, campaign: str) -> dict[str, Any]:
    """A `dvfslab validate --json` output of `campaign`, checked enough to compare against: its
    schema, its campaign, its scores and its cells' identifying fields."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: no such file (expected a `dvfslab validate --json` output)"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConfigError(f"{path}: not a `dvfslab validate --json` output: {e}") from None
    if not isinstance(data, dict) or data.get("schema") != VALIDATE_SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ConfigError(f"{path}: field 'schema': expected '{VALIDATE_SCHEMA}', got {found!r}")
    for key in ("campaign", "cells"):
        if key not in data:
            raise ConfigError(f"{path}: field '{key}' is missing")
    if data["campaign"] != campaign:
        raise ConfigError(
            f"{path}: field 'campaign': '{data['campaign']}', expected '{campaign}' (a "
            "validation of the same campaign)"
        )
    if not isinstance(data["cells"], list):
        raise ConfigError(f"{path}: field 'cells': expected a list")
    for i, cell in enumerate(data["cells"]):
        missing = [k for k in (*_CELL_KEY, "published", "simulated", "agree") if k not in cell]
        if missing:
            raise ConfigError(f"{path}: field 'cells[{i}].{missing[0]}' is missing")
    return data


def compare(before: dict[str, Any], after: dict[str, Any], against: str) -> dict[str, Any]:
    """The change from validation `before` (read from `against`) to `after` of the same
    campaign, as JSON-ready data."""

    def key(cell: dict[str, Any]) -> tuple[str, ...]:
        return tuple(str(cell[k]) for k in _CELL_KEY)

    earlier = {key(c): c for c in before["cells"]}
    later = {key(c): c for c in after["cells"]}
    changed = []
    for k, now in later.items():
        then = earlier.get(k)
        if then is None:
            continue
        flipped = then["agree"] != now["agree"]
        if flipped or _moved(then["simulated"], now["simulated"]):
            changed.append(
                {
                    **dict(zip(_CELL_KEY, k)),
                    "published": now["published"],
                    "before": then["simulated"],
                    "after": now["simulated"],
                    "agree_before": then["agree"],
                    "agree_after": now["agree"],
                }
            )
    return {
        "against": against,
        "scores": {k: {"before": before.get(k), "after": after.get(k)} for k in SCORE_KEYS},
        "changed": changed,
        "only_before": len(earlier.keys() - later.keys()),
        "only_after": len(later.keys() - earlier.keys()),
    }


def _moved(before: float | None, after: float | None) -> bool:
    if before is None or after is None:
        return before is not after
    if before == 0 or not (math.isfinite(before) and math.isfinite(after)):
        return before != after
    return abs(after / before - 1) > MOVED


def _verdict(agree: bool | None) -> str:
    return {True: "agrees", False: "misses", None: "-"}[agree]


def _score_rows(diff: dict[str, Any]) -> list[list[str]]:
    rows = []
    for k, s in diff["scores"].items():
        rows.append([k, fmt_value(s["before"], 3), fmt_value(s["after"], 3)])
    return rows


def _cell_rows(diff: dict[str, Any]) -> list[list[str]]:
    rows = []
    for c in diff["changed"]:
        digits = 3 if c["table"] in ("ratios", "perf-per-watt") else 2
        flip = c["agree_before"] != c["agree_after"]
        change = f"{_verdict(c['agree_before'])} → {_verdict(c['agree_after'])}" if flip else ""
        rows.append(
            [
                c["table"],
                c["machine"],
                c["benchmark"],
                c["param"] or "-",
                c["config"],
                fmt_value(c["published"], digits),
                fmt_value(c["before"], digits),
                fmt_value(c["after"], digits),
                change,
            ]
        )
    return rows


_CELL_HEADERS = [
    "table",
    "machine",
    "benchmark",
    "param",
    "config",
    "published",
    "before",
    "after",
    "verdict",
]


def _footnote(diff: dict[str, Any]) -> str:
    n = len(diff["changed"])
    flips = [c for c in diff["changed"] if c["agree_before"] != c["agree_after"]]
    text = f"{n} cells changed ({len(flips)} verdicts; the others moved by more than {MOVED:.0%})"
    # Per table, the cells that came to agree and those that no longer do.
    tables = dict.fromkeys(c["table"] for c in flips)
    gained = {t: sum(c["table"] == t and c["agree_after"] is True for c in flips) for t in tables}
    lost = {t: sum(c["table"] == t and c["agree_before"] is True for c in flips) for t in tables}
    if tables:
        text += ": " + ", ".join(f"{t} +{gained[t]} -{lost[t]}" for t in tables)
    if diff["only_before"] or diff["only_after"]:
        text += (
            f"; {diff['only_before']} cells only in {diff['against']}, "
            f"{diff['only_after']} only in this validation"
        )
    return text


def print_comparison(diff: dict[str, Any], out: TextIO | None = None) -> None:
    out = out or sys.stdout
    print_table(
        ["score", "before", "after"],
        _score_rows(diff),
        right={"before", "after"},
        title=f"against {diff['against']}",
        out=out,
    )
    if diff["changed"]:
        print(file=out)
        numeric = {"published", "before", "after"}
        print_table(_CELL_HEADERS, _cell_rows(diff), right=numeric, out=out, no_wrap=True)
    print(_footnote(diff), file=out)


def print_comparison_markdown(diff: dict[str, Any], out: TextIO | None = None) -> None:
    out = out or sys.stdout
    print(f"\n### Against {diff['against']}\n", file=out)
    scores = _score_rows(diff)
    print_markdown_table(["score", "before", "after"], scores, right={"before", "after"}, out=out)
    if diff["changed"]:
        print(file=out)
        numeric = {"published", "before", "after"}
        print_markdown_table(_CELL_HEADERS, _cell_rows(diff), right=numeric, out=out)
    print(f"\n{_footnote(diff)}", file=out)
