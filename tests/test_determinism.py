"""Same inputs and seed, same result; another seed, another draw of the random workload."""

from __future__ import annotations

import json

import dvfslab

SMALL = "skylake-e3-1240v5"


def outcome(summary: dict) -> dict:
    """The summary without what may differ between identical runs (wall time) or seeds (seed)."""
    return {k: v for k, v in summary.items() if k not in ("wall_time_s", "seed")}


def test_same_seed_gives_an_identical_result(periodic_jittered):
    first = dvfslab.simulate(SMALL, "performance", periodic_jittered, duration_s=1, seed=7)
    second = dvfslab.simulate(SMALL, "performance", periodic_jittered, duration_s=1, seed=7)
    assert outcome(first.to_dict()) == outcome(second.to_dict())


def test_another_seed_gives_another_result(periodic_jittered):
    first = dvfslab.simulate(SMALL, "performance", periodic_jittered, duration_s=1, seed=7)
    other = dvfslab.simulate(SMALL, "performance", periodic_jittered, duration_s=1, seed=8)
    assert outcome(first.to_dict()) != outcome(other.to_dict())


def test_cli_json_is_the_same_run_as_the_api(cli, periodic_jittered):
    args = ["run", "-p", SMALL, "-g", "performance", "-w", periodic_jittered]
    runs = [cli(*args, "--duration", "1", "--seed", "7", "--json") for _ in range(2)]
    assert [run.code for run in runs] == [0, 0], runs[0].stderr
    first, second = (json.loads(run.stdout) for run in runs)
    assert outcome(first) == outcome(second)

    api = dvfslab.simulate(SMALL, "performance", periodic_jittered, duration_s=1, seed=7)
    assert outcome(first) == outcome(api.to_dict())
