"""dvfslab.campaign.variants: model variants drawn from the declared constants, and what a
campaign does with them."""

from __future__ import annotations

import json

import pytest

from dvfslab import ConfigError
from dvfslab.campaign import campaign_from_dict, variants
from dvfslab.platforms import load_platform

PRESET = "skylake-e3-1240v5"


# -- the Latin hypercube -----------------------------------------------------------------------


@pytest.mark.parametrize("iterations", [1, 2, 5, 12])
def test_each_iteration_draws_from_its_own_stratum(iterations):
    for name in ("a", "platform:/clusters/0/power/c_eff_nf", "workload:tbench:client_us"):
        qs = [variants.quantile(7, name, i, iterations) for i in range(1, iterations + 1)]
        assert all(0 <= q < 1 for q in qs)
        assert sorted(int(q * iterations) for q in qs) == list(range(iterations))


def test_strata_are_shuffled_per_constant_and_seed():
    order = {
        (seed, name): [int(variants.quantile(seed, name, i, 8) * 8) for i in range(1, 9)]
        for seed in (1, 2)
        for name in ("x", "y")
    }
    assert len({tuple(v) for v in order.values()}) == 4


def test_a_draw_is_a_function_of_seed_constant_and_iteration():
    assert variants.quantile(3, "x", 2, 5) == variants.quantile(3, "x", 2, 5)
    assert variants.quantile(3, "x", 2, 5) != variants.quantile(4, "x", 2, 5)
    with pytest.raises(ValueError, match=r"not within 1\.\.5"):
        variants.quantile(3, "x", 6, 5)


def test_declared_draws_stay_in_range_and_round_whole_constants():
    c = variants.Declared("platform", "/a", 10.0, 8.0, 12.0, "s")
    assert [c.draw(q) for q in (0.0, 0.5, 1.0)] == [8.0, 10.0, 12.0]
    whole = variants.Declared("platform", "/b", 10.0, 8.0, 12.0, "s", integer=True)
    assert whole.draw(0.37) == 9.0
    assert whole.draw(0.99) == 12.0


# -- presets and workloads ---------------------------------------------------------------------


def test_a_variant_preset_draws_every_declared_constant_within_its_range():
    preset_json, source = load_platform(PRESET)
    declared = variants.platform_constants(preset_json, source)
    assert declared, "the preset declares its uncertain constants"
    drawn = variants.variant_preset(preset_json, source, 11, 2, 5)
    again = variants.platform_constants(drawn, source)  # the simulator accepts it
    assert [c.name for c in again] == [c.name for c in declared]
    moved = 0
    for before, after in zip(declared, again):
        assert (after.low, after.high) == (before.low, before.high)
        assert before.low <= after.value <= before.high
        moved += after.value != before.value
    assert moved == len(declared)
    assert drawn == variants.variant_preset(preset_json, source, 11, 2, 5)


def test_a_variant_workload_sets_the_declared_knobs_it_leaves_unset():
    declared = variants.workload_constants("tbench:clients=4")
    assert declared, "tbench declares its per-operation costs"
    first = declared[0].name
    drawn = variants.variant_workload(f"tbench:clients=4,{first}=5", 1, 1, 3)
    knobs = dict(item.split("=") for item in drawn.split(":", 1)[1].split(","))
    assert knobs["clients"] == "4"
    assert knobs[first] == "5"  # the spec's own value stays
    for c in declared[1:]:
        assert c.low <= float(knobs[c.name]) <= c.high
    for knob, value in variants.SEED_VARIATION:
        assert float(knobs[knob]) == value


def test_set_constants_moves_a_declared_range_with_its_value():
    doc = {"a": {"value": 2.0, "range": [1.8, 2.2], "source": "s"}, "b": [1, 2]}
    out = json.loads(variants.set_constants(json.dumps(doc), {"/a": 4.0, "/b/1": 7}))
    assert out["a"]["value"] == 4.0
    assert out["a"]["range"] == pytest.approx([3.6, 4.4])
    assert out["b"] == [1, 7]


def test_with_knobs_replaces_or_appends():
    assert variants.with_knobs("pgbench:rw=0,client_us=8", {"client_us": 3.0}) == (
        "pgbench:rw=0,client_us=3"
    )
    assert variants.with_knobs("tbench", {"x": 1.5}) == "tbench:x=1.5"


# -- campaigns ---------------------------------------------------------------------------------


def _campaign(**extra):
    doc = {
        "name": "v",
        "platforms": [PRESET],
        "configs": {"a": "performance", "b": "powersave"},
        "baseline": "a",
        "benchmarks": {"t": {"workload": "tbench", "sweep": {"clients": [1, 2]}}},
        "iterations": 3,
        "seed": 5,
        **extra,
    }
    return campaign_from_dict(doc, source="test")


def test_a_campaign_iteration_is_one_variant_for_every_config_and_parameter():
    runs = _campaign().runs()
    by_iteration: dict[int, set[str]] = {}
    for run in runs:
        by_iteration.setdefault(run.iteration, set()).add(run.preset_json)
    assert all(len(presets) == 1 for presets in by_iteration.values())
    assert len({next(iter(p)) for p in by_iteration.values()}) == 3
    # "tbench:clients=N,<the variant's knobs>": the knobs after the swept parameter.
    costs = {(r.iteration, r.config, r.param): r.workload.split(",", 1)[1] for r in runs}
    for iteration in (1, 2, 3):
        assert len({v for (i, _, _), v in costs.items() if i == iteration}) == 1


def test_a_nominal_campaign_runs_the_preset_and_spec_as_written():
    nominal = _campaign(nominal=True)
    preset_json, _ = load_platform(PRESET)
    assert {r.preset_json for r in nominal.runs()} == {preset_json}
    assert {r.workload for r in nominal.runs()} == {"tbench:clients=1", "tbench:clients=2"}
    assert nominal.manifest()["nominal"] is True
    with pytest.raises(ConfigError, match="nominal: expected true or false"):
        _campaign(nominal="yes")
