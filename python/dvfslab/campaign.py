"""Campaigns: platforms x configurations x benchmarks (a workload and its parameter sweep) x
iterations, read from a TOML file (docs/campaign-format.md), expanded into runs, and run.

    >>> from dvfslab.campaign import load_campaign, run_campaign
    >>> from dvfslab.store import load_results
    >>> campaign = load_campaign("example")          # a shipped campaign, or a .toml file
    >>> run_campaign(campaign, "results/example")    # runs only what is not stored yet
    >>> load_results("results/example")              # one row per run

A run sits at coordinates (platform, benchmark, config, param, iteration). Its seed is hashed
from the campaign seed and those coordinates, so adding or removing runs never changes the seed
of another; its key is hashed from everything that decides its result (preset text, governor
and workload specs, duration, seed, simulator version), so a stored result is reused exactly
when it would be reproduced.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from dvfslab import _core
from dvfslab._campaign_check import campaign_from_dict
from dvfslab._campaign_model import (
    Benchmark,
    Campaign,
    Config,
    Platform,
    Run,
    run_key,
    run_seed,
)
from dvfslab._core import ConfigError
from dvfslab.api import duration_ns
from dvfslab.governors import resolve as resolve_governor

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

if TYPE_CHECKING:
    from dvfslab._runner import RunSummary

__all__ = [
    "Benchmark",
    "Campaign",
    "CampaignRef",
    "Config",
    "Platform",
    "Run",
    "campaign_from_dict",
    "campaign_names",
    "check_campaign",
    "check_setup",
    "distinct_setups",
    "list_campaigns",
    "load_campaign",
    "run_campaign",
    "run_key",
    "run_seed",
]

CampaignRef = Union[str, "os.PathLike[str]"]
"""A shipped campaign's name ("example") or the path of a campaign file ("./mine.toml")."""


# -- finding and reading campaign files ------------------------------------------------------


def campaign_names() -> list[str]:
    """The names of the shipped campaigns, sorted."""
    directory = resources.files("dvfslab") / "data" / "campaigns"
    if not directory.is_dir():
        return []
    return sorted(e.name[: -len(".toml")] for e in directory.iterdir() if e.name.endswith(".toml"))


def list_campaigns() -> list[dict[str, Any]]:
    """Every shipped campaign: name, description, and how many platforms, configs, runs."""
    out = []
    for name in campaign_names():
        campaign = load_campaign(name)
        out.append(
            {
                "name": campaign.name,
                "description": campaign.description,
                "platforms": [p.name for p in campaign.platforms],
                "configs": [c.name for c in campaign.configs],
                "benchmarks": [b.name for b in campaign.benchmarks],
                "runs": len(campaign.runs()),
            }
        )
    return out


def load_campaign(campaign: CampaignRef) -> Campaign:
    """Read and check a campaign: a shipped name (see `campaign_names()`) or a .toml file.

    Raises ConfigError naming the file, the key and what was expected.
    """
    path = _find_campaign(campaign)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"campaign file {path} does not exist") from None
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text (byte {e.start} cannot be decoded)") from None
    except OSError as e:
        raise ConfigError(f"cannot read campaign file {path}: {e.strerror or e}") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None
    return campaign_from_dict(doc, source=str(path), base_dir=path.parent, default_name=path.stem)


def _find_campaign(campaign: CampaignRef) -> Path:
    if isinstance(campaign, os.PathLike):
        return Path(campaign)
    if not isinstance(campaign, str):
        raise TypeError(f"campaign must be a name or a path (got {type(campaign).__name__})")
    looks_like_path = campaign.endswith(".toml") or any(
        sep in campaign for sep in (os.sep, os.altsep) if sep
    )
    if not looks_like_path and campaign in campaign_names():
        shipped = resources.files("dvfslab") / "data" / "campaigns" / f"{campaign}.toml"
        return Path(str(shipped))
    if looks_like_path or Path(campaign).is_file():
        return Path(campaign)
    known = ", ".join(campaign_names()) or "none shipped"
    raise ConfigError(f"unknown campaign {campaign!r} (shipped: {known}; or give a .toml file)")


# -- running -----------------------------------------------------------------------------------


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


def run_campaign(
    campaign: Campaign,
    out_dir: str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    ray_address: str | None = None,
    progress: bool = True,
    force: bool = False,
) -> RunSummary:
    """Run every run of `campaign` not yet stored in `out_dir`, storing each as it finishes.

    out_dir:     the results store (default results/<campaign name>); see `dvfslab.store`
    jobs:        local worker processes (default: every CPU this process may use)
    ray_address: run on a Ray cluster instead ("auto", "ray://host:10001", or "local" for an
                 instance started here); needs the `ray` package
    progress:    show progress on stderr: a bar on a terminal, a line every 10 s otherwise
    force:       store the runs even in a store another campaign wrote (its manifest is
                 replaced; its run files stay, and those with the same key are reused)

    Safe to interrupt or kill at any point: finished runs are kept and the next call runs the
    rest; a run file that is not whole is named on stderr and run again. Raises ConfigError for
    bad input (a store of another campaign, without `force`) before running anything, and the
    first run's error (naming its coordinates) if a run fails. Local workers are started with
    the "spawn" method: a script that calls this must guard its top level with
    `if __name__ == "__main__"`.
    """
    from dvfslab._runner import run_campaign as run

    return run(
        campaign, out_dir, jobs=jobs, ray_address=ray_address, progress=progress, force=force
    )
