"""The shipped campaigns (python/dvfslab/data/campaigns/): each loads and passes the simulator's
pre-run check, and `dvfslab campaign list` lists them. Nothing is run, so this stays fast."""

from __future__ import annotations

import json

import pytest

from dvfslab.campaign import campaign_names, check_campaign, load_campaign

# Shipped by this change (other campaigns may be shipped too; they are checked as well).
EXPECTED = (
    "example",
    "amd-epyc-freqmax",
    "intel-pstate-load-based",
    "powernv-ramp-down",
    "margins-pixel6",
)


# Every test each publication lists (docs/campaigns.md), by the campaign's benchmark ids.
PUBLISHED_TESTS = {
    "amd-epyc-freqmax": {"tbench4", "dbench4", "kernbench", "gitsource"},
    "intel-pstate-load-based": {
        "ffmpeg",
        "apache",
        "kernbench",
        "postmark",
        "seq-read",
        "random-read",
        "pipe-test",
        "specpower",
        "freq-response",
        "step-load",
    },
    # YCSB's max latency per operation type: reads and updates.
    "powernv-ramp-down": {"iozone", "ycsb-redis", "ycsb-redis-update"},
    "margins-pixel6": {"speedometer", "uibench"},
}


@pytest.mark.parametrize("name", sorted(PUBLISHED_TESTS))
def test_campaign_runs_every_published_test(name):
    assert {b.name for b in load_campaign(name).benchmarks} == PUBLISHED_TESTS[name]


def test_expected_campaigns_are_shipped():
    assert set(EXPECTED) <= set(campaign_names())


@pytest.mark.parametrize("name", campaign_names())
def test_shipped_campaign_loads_and_passes_check(name):
    campaign = load_campaign(name)
    assert campaign.name == name
    assert campaign.description
    assert campaign.runs()
    # The check the runner does before the first run: a 1 ns simulation of every distinct
    # (platform, governor spec, workload spec).
    check_campaign(campaign)


def test_cli_campaign_list_lists_shipped_campaigns(cli):
    run = cli("campaign", "list", "--json")
    assert run.code == 0, run.stderr
    listed = {c["name"]: c for c in json.loads(run.stdout)}
    assert set(EXPECTED) <= set(listed)
    for name in EXPECTED:
        assert listed[name]["runs"] == len(load_campaign(name).runs())
