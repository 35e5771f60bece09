"""dvfslab.campaign.variants: model variants drawn from the declared constants, and what a
campaign does with them."""

from __future__ import annotations

import dataclasses
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


# -- structural variants -----------------------------------------------------------------------

HASWELL = "haswell-e5-2670v3-2s"


def _io_campaign(structural, nominal=False, iterations=4):
    doc = {
        "name": "s",
        "platforms": [PRESET, HASWELL],
        "configs": {"a": "performance"},
        "baseline": "a",
        "benchmarks": {
            "db": {"workload": "dbench4", "sweep": {"clients": [1, 4]}},
            "pg": {"workload": "pgbench:rw=1"},
            "t": "tbench",
        },
        "iterations": iterations,
        "seed": 9,
        "nominal": nominal,
        "structural": structural,
    }
    return campaign_from_dict(doc, source="test")


DEVICE = {
    "device": {
        "source": "the publication's watts",
        "benchmarks": ["db", "pg"],
        "by_platform": {PRESET: {"nvme": 1.0}, HASWELL: {"hdd": 0.5, "sata-ssd": 0.5}},
    }
}


def _device(workload: str) -> str | None:
    knobs = dict(kv.partition("=")[::2] for kv in workload.partition(":")[2].split(","))
    return knobs.get("device")


def test_a_structural_draw_lays_the_weights_end_to_end():
    s = variants.Structural("device", "src", ("db",), (("hdd", 1.0), ("nvme", 3.0)))
    assert [s.draw("any", q) for q in (0.0, 0.24, 0.25, 0.99)] == ["hdd", "hdd", "nvme", "nvme"]
    assert s.nominal("any") == "hdd"  # the first listed, whatever its weight


def test_a_nominal_campaign_takes_the_first_alternative():
    runs = _io_campaign(DEVICE, nominal=True).runs()
    devices = {(r.platform, r.benchmark): _device(r.workload) for r in runs}
    assert devices[(PRESET, "db")] == devices[(PRESET, "pg")] == "nvme"
    assert devices[(HASWELL, "db")] == devices[(HASWELL, "pg")] == "hdd"
    assert devices[(HASWELL, "t")] is None  # not a benchmark the switch applies to
    # The switch is not a parameter: the runs keep their sweep's labels.
    assert {r.param for r in runs if r.benchmark == "db"} == {"clients=1", "clients=4"}


def test_each_iteration_draws_one_alternative_per_machine_by_weight():
    campaign = _io_campaign(DEVICE, iterations=4)
    drawn: dict[tuple[str, int], set[str | None]] = {}
    for run in campaign.runs():
        if run.benchmark != "t":
            drawn.setdefault((run.platform, run.iteration), set()).add(_device(run.workload))
    # One disk per machine and iteration, for both benchmarks and every parameter.
    assert all(len(d) == 1 for d in drawn.values())
    haswell = [next(iter(drawn[(HASWELL, i)])) for i in range(1, 5)]
    assert sorted(haswell) == ["hdd", "hdd", "sata-ssd", "sata-ssd"]  # the hypercube's strata
    assert {next(iter(drawn[(PRESET, i)])) for i in range(1, 5)} == {"nvme"}
    manifest = campaign.manifest()["structural"]["device"]
    assert manifest["by_platform"][HASWELL] == {"hdd": 0.5, "sata-ssd": 0.5}
    assert manifest["source"] == "the publication's watts"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"benchmarks": ["nope"]},
            r"structural\.device\.benchmarks\[0\]: 'nope' is not a benchmark",
        ),
        ({"benchmarks": ["t"]}, r"'tbench' \(t\) has no knob 'device'"),
        ({"by_platform": {PRESET: {"nvme": 1.0}}}, r"no choices for haswell-e5-2670v3-2s"),
        ({"by_platform": None, "choices": None}, "expected one of 'choices'"),
        ({"choices": {"nvme": 1.0}}, "expected one of 'choices'"),
        ({"by_platform": {PRESET: {"nvme": 0.0}, HASWELL: {"hdd": 1.0}}}, "a weight > 0"),
        ({"source": None}, r"structural\.device: missing key 'source'"),
    ],
)
def test_a_bad_structural_table_names_the_key(change, message):
    table = {k: v for k, v in {**DEVICE["device"], **change}.items() if v is not None}
    with pytest.raises(ConfigError, match=message):
        _io_campaign({"device": table})


def test_a_swept_knob_cannot_also_be_a_switch():
    table = {**DEVICE["device"], "benchmarks": ["db"]}
    doc = {
        "name": "s",
        "platforms": [PRESET],
        "configs": {"a": "performance"},
        "baseline": "a",
        "benchmarks": {"db": {"workload": "dbench4", "sweep": {"device": ["nvme", "hdd"]}}},
        "structural": {"device": {**table, "by_platform": {PRESET: {"nvme": 1.0}}}},
    }
    with pytest.raises(ConfigError, match="db sets or sweeps 'device': a switch draws it"):
        campaign_from_dict(doc, source="test")


def test_the_shipped_campaign_draws_the_disks_it_declares():
    from dvfslab.campaign import load_campaign

    campaign = load_campaign("intel-invariance")
    (device,) = campaign.structural
    assert device.source
    assert set(device.benchmarks) == {"pgbench-rw", "dbench4"}
    nominal = {
        (r.platform, _device(r.workload))
        for r in dataclasses.replace(campaign, nominal=True).runs()
        if r.benchmark in device.benchmarks
    }
    assert nominal == {
        ("skylake-e3-1240v5", "nvme"),
        ("broadwell-e5-2698v4-2s", "ssd"),
        ("haswell-e5-2670v3-2s", "hdd"),
    }


def test_broadwells_variants_draw_both_the_rotating_disk_and_a_fast_one():
    # Its pgbench-rw watts ask for the rotating disk and its dbench4 watts for a fast one
    # (docs/validation.md, setup): the campaign's iterations must draw both sides.
    from dvfslab.campaign import load_campaign

    campaign = load_campaign("intel-invariance")
    drawn = {
        (r.benchmark, r.iteration): _device(r.workload)
        for r in campaign.runs()
        if r.platform == "broadwell-e5-2698v4-2s" and r.benchmark in ("pgbench-rw", "dbench4")
    }
    assert "hdd" in drawn.values()
    assert {"ssd", "nvme"} & set(drawn.values())
    # One draw per iteration, shared by the switch's benchmarks.
    for iteration in range(1, campaign.iterations + 1):
        assert drawn[("pgbench-rw", iteration)] == drawn[("dbench4", iteration)]
