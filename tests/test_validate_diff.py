"""`dvfslab validate NAME --against EARLIER.json`: what changed between two validations."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from campaign_helpers import TINY_VALIDATION as TINY
from dvfslab._core import ConfigError
from dvfslab.validate import VALIDATE_SCHEMA
from dvfslab.validate.diff import SCORE_KEYS, compare, load_validation


def cell(config: str, simulated: float | None, agree: bool | None, table: str = "ratios"):
    return {
        "table": table,
        "machine": "m",
        "benchmark": "b",
        "param": "",
        "config": config,
        "published": 1.05,
        "simulated": simulated,
        "agree": agree,
    }


def validation(cells: list[dict], direction: float = 0.5) -> dict:
    scores = {key: 0.5 for key in SCORE_KEYS} | {"ratio_misses_within_ci": 0}
    doc = {"schema": VALIDATE_SCHEMA, "campaign": "c", **scores, "cells": cells}
    return doc | {"direction_agreement": direction}


def test_compare_lists_flipped_and_moved_cells_and_counts_the_unmatched():
    before = validation(
        [
            cell("flips", 1.01, False),
            cell("moves", 1.10, True),
            cell("stays", 1.10, True),
            cell("gone", 1.10, True),
            cell("now-run", None, None),
        ],
        direction=0.25,
    )
    after = validation(
        [
            cell("flips", 1.03, True),  # 2% is not a move, but the verdict changed
            cell("moves", 1.14, True),  # 3.6%: moved, same verdict
            cell("stays", 1.11, True),  # 0.9%: neither
            cell("now-run", 1.2, True),  # simulated now, not before
            cell("new", 1.2, True),
        ],
        direction=0.75,
    )
    diff = compare(before, after, "before.json")
    assert diff["scores"]["direction_agreement"] == {"before": 0.25, "after": 0.75}
    assert set(diff["scores"]) == set(SCORE_KEYS)
    changed = {c["config"]: c for c in diff["changed"]}
    assert set(changed) == {"flips", "moves", "now-run"}
    assert (changed["flips"]["agree_before"], changed["flips"]["agree_after"]) == (False, True)
    assert (changed["moves"]["before"], changed["moves"]["after"]) == (1.10, 1.14)
    assert (diff["only_before"], diff["only_after"]) == (1, 1)


def write(tmp_path: Path, doc: object, name: str = "earlier.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ("{not json", "not a `dvfslab validate --json` output"),
        ([1, 2], "field 'schema': expected 'dvfslab-validate/2', got 'list'"),
        ({"schema": "dvfslab-run/1"}, "field 'schema': expected 'dvfslab-validate/2'"),
        ({"schema": VALIDATE_SCHEMA, "campaign": "c"}, "field 'cells' is missing"),
        (validation([]) | {"campaign": "other"}, "field 'campaign': 'other', expected 'c'"),
        (validation([]) | {"cells": {}}, "field 'cells': expected a list"),
        (validation([{"table": "ratios"}]), "field 'cells[0].machine' is missing"),
    ],
)
def test_a_bad_earlier_validation_is_refused_naming_the_field(tmp_path, doc, expected):
    path = write(tmp_path, doc)
    with pytest.raises(ConfigError, match=str(path)) as err:
        load_validation(path, "c")
    assert expected in str(err.value)


def test_a_missing_earlier_validation_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        load_validation(tmp_path / "none.json", "c")


def test_cli_compares_with_an_earlier_validation(cli, tmp_path: Path):
    campaign = tmp_path / "tiny.toml"
    campaign.write_text(TINY, encoding="utf-8")
    args = ["validate", str(campaign), "--iterations", "1", "--out", str(tmp_path / "s")]
    now = json.loads(cli(*args, "--jobs", "1", "--json", "--quiet").stdout)
    # An earlier validation in which one simulated cell read 10% lower and missed.
    earlier = copy.deepcopy(now)
    target = next(c for c in earlier["cells"] if c["simulated"] is not None)
    target["simulated"] /= 1.1
    target["agree"] = not target["agree"]
    earlier["direction_agreement"] = 0.125
    path = write(tmp_path, earlier)

    run = cli(*args, "--against", str(path), "--json", "--quiet")
    assert run.code == 0, run.stderr
    diff = json.loads(run.stdout)["against"]
    assert diff["against"] == str(path)
    assert diff["scores"]["direction_agreement"] == {
        "before": 0.125,
        "after": now["direction_agreement"],
    }
    (changed,) = diff["changed"]
    keys = ("table", "machine", "benchmark", "config")
    assert all(changed[k] == target[k] for k in keys)
    assert changed["agree_after"] == (not changed["agree_before"])

    text = cli(*args, "--against", str(path), "--quiet")
    assert text.code == 0, text.stderr
    assert f"against {path}" in text.stdout
    assert "1 cells changed (1 verdicts" in text.stdout
    came = "+1 -0" if changed["agree_after"] else "+0 -1"
    assert f"{changed['table']} {came}" in text.stdout
    markdown = cli(*args, "--against", str(path), "--markdown", "--quiet")
    assert f"### Against {path}" in markdown.stdout
    assert "| direction_agreement | 0.125 |" in markdown.stdout


def test_cli_refuses_a_bad_earlier_validation_before_running(cli, tmp_path: Path):
    campaign = tmp_path / "tiny.toml"
    campaign.write_text(TINY, encoding="utf-8")
    path = write(tmp_path, validation([]))  # campaign "c", not intel-invariance
    run = cli("validate", str(campaign), "--out", str(tmp_path / "s"), "--against", str(path))
    assert run.code == 1
    assert f"{path}: field 'campaign': 'c', expected 'intel-invariance'" in run.stderr
    assert not (tmp_path / "s").exists()
