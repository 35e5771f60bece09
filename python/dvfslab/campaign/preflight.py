"""Checking a campaign's setups before it runs: the simulator checks each distinct (platform,
governor, workload) with a 1 ns run, so that a bad tunable stops a campaign before it starts, not
hours in."""

from __future__ import annotations

from collections.abc import Sequence

from dvfslab import _core
from dvfslab._core import ConfigError
from dvfslab.api import duration_ns
from dvfslab.campaign.model import Campaign, Run
from dvfslab.governors import resolve as resolve_governor


def check_campaign(campaign: Campaign, runs: Sequence[Run] | None = None) -> None:
    """Have the simulator check each distinct (platform, governor, workload) of `runs` (default:
    all) with a 1 ns run, so that a bad tunable stops a campaign before it starts, not hours in.

    Raises ConfigError naming the campaign file, the platform, config and benchmark.
    """
    for run in distinct_setups(campaign.runs() if runs is None else runs):
        check_setup(campaign, run)


def distinct_setups(runs: Sequence[Run]) -> list[Run]:
    """The first run of each distinct (platform and its variant, governor, workload,
    duration): what `check_setup` needs to see once."""
    first: dict[tuple[str, str, str, str, float | None], Run] = {}
    for run in runs:
        key = (run.platform, run.preset_json, run.governor, run.workload, run.duration_s)
        first.setdefault(key, run)
    return list(first.values())


def check_setup(campaign: Campaign, run: Run) -> None:
    """Have the simulator check `run`'s platform, governor, workload and duration as the run
    would, without running it (`_core.check`)."""
    platform = campaign.platform(run.platform)
    workload, workload_source = run.simulated_workload()
    try:
        governor, _ = resolve_governor(run.governor)
        _core.check(
            run.preset_json or platform.preset_json,
            platform.ref,
            governor,
            workload,
            duration_ns=duration_ns(run.duration_s),
            workload_source=workload_source,
        )
    except ConfigError as e:
        where = campaign.source or f"campaign {campaign.name}"
        param = f" ({run.param})" if run.param else ""
        raise ConfigError(
            f"{where}: platform {run.platform}, config {run.config}, "
            f"benchmark {run.benchmark}{param}: {e}"
        ) from None
