"""Finding and reading campaign files: the shipped ones (dvfslab/data/campaigns/) by name, any
other by its path (docs/campaign-format.md)."""

from __future__ import annotations

import os
import sys
from importlib import resources
from pathlib import Path
from typing import Any, Union

from dvfslab._core import ConfigError
from dvfslab._files import read_text
from dvfslab.campaign.check import campaign_from_dict
from dvfslab.campaign.model import Campaign

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

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
    text = read_text(path, "campaign file")
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
