"""Campaigns: platforms x configurations x benchmarks (a workload and its parameter sweep) x
iterations, read from a TOML file (docs/campaign-format.md), expanded into runs, and run.

    >>> from dvfslab.campaign import load_campaign, run_campaign, load_results
    >>> campaign = load_campaign("example")          # a shipped campaign, or a .toml file
    >>> run_campaign(campaign, "results/example")    # runs only what is not stored yet
    >>> load_results("results/example")              # one row per run

A run sits at coordinates (platform, benchmark, config, param, iteration). Its seed is hashed
from the campaign seed and those coordinates, so adding or removing runs never changes the seed
of another; its key is hashed from everything that decides its result (preset text, governor
and workload specs, duration, seed, simulator version), so a stored result is reused exactly
when it would be reproduced.

The package's modules, in the order a campaign goes through them: `files` (finding and reading
a campaign file), `schema` and `check` (its shape, then what needs more than the file, with
`key_errors` naming the key), `model` (the campaign as data, its runs), `variants` (the model
variant an iteration simulates), `preflight` (the simulator checks each setup), `runner` (runs
it locally or on Ray) and `store` (the results on disk).
"""

from dvfslab.campaign.check import campaign_from_dict
from dvfslab.campaign.files import CampaignRef, campaign_names, list_campaigns, load_campaign
from dvfslab.campaign.model import Benchmark, Campaign, Config, Platform, Run, run_key, run_seed
from dvfslab.campaign.preflight import check_campaign, check_setup, distinct_setups
from dvfslab.campaign.runner import RunSummary, run_campaign
from dvfslab.campaign.store import count_runs, load_manifest, load_results

__all__ = [
    "Benchmark",
    "Campaign",
    "CampaignRef",
    "Config",
    "Platform",
    "Run",
    "RunSummary",
    "campaign_from_dict",
    "campaign_names",
    "check_campaign",
    "check_setup",
    "count_runs",
    "distinct_setups",
    "list_campaigns",
    "load_campaign",
    "load_manifest",
    "load_results",
    "run_campaign",
    "run_key",
    "run_seed",
]
