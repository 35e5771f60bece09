"""Fuzzing through the public API: spec strings, rt-app JSON, preset JSON and campaign TOML.

Whatever the input, the answer is a result or a `ConfigError` (a `DvfsError` at worst): never
another exception, never a panic reported from the simulator. Every run is short (a few
simulated milliseconds), so a case costs milliseconds.

The number of generated cases per target is `DVFSLAB_FUZZ_EXAMPLES` (default 100, a bounded run
for every test session); docs/robustness.md gives the command for a long run. Inputs that once
crashed are kept as `@example`s so they are tried on every run.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import dvfslab
from dvfslab import ConfigError, DvfsError, _core
from dvfslab.campaign import campaign_from_dict, check_campaign

EXAMPLES = int(os.environ.get("DVFSLAB_FUZZ_EXAMPLES", "100"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize="DVFSLAB_FUZZ_EXAMPLES" not in os.environ,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SMALL = "skylake-e3-1240v5"
DURATION_S = 0.003

WORKLOADS = json.loads(_core.workloads())
GOVERNORS = json.loads(_core.governors())
SYSTEM_TUNABLES = json.loads(_core.system_tunables())
COMMON_KNOBS = json.loads(_core.common_workload_knobs())


def answers_cleanly(call: Any) -> None:
    """Call; a result or a DvfsError passes, a panic or any other exception fails the case."""
    message = ""
    try:
        call()
    except ConfigError:
        return
    except DvfsError as e:
        message = str(e)
    assert "panicked" not in message, message
    assert "internal error" not in message, message


# -- spec strings ------------------------------------------------------------------------------

# Values at and beyond every edge a knob can have: numbers of every scale, signs, non-numbers.
EDGE_VALUES = st.one_of(
    st.sampled_from(
        ["0", "-1", "1e-308", "1e-11", "1e308", "inf", "-inf", "nan", "1.5", "65536", "1e7", ""]
    ),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.text(alphabet="0123456789.eE+-xa,:=", max_size=8),
)


def knob_values(knobs: list[dict[str, Any]]) -> st.SearchStrategy[str]:
    """Values near a knob's range: its bounds, inside, just outside, and the edge values."""
    inside = st.one_of(
        *(
            st.floats(min_value=k["min"], max_value=k["max"]).map(repr)
            for k in knobs
            if "max" in k and k["max"] > k["min"]
        ),
        st.just("1"),
    )
    numeric = [k for k in knobs if "max" in k]
    bounds = st.sampled_from([repr(b) for k in numeric for b in (k["min"], k["max"])] or ["0"])
    choices = st.sampled_from([c for k in numeric for c in k["choices"]] or ["0"])
    return st.one_of(inside, bounds, choices, EDGE_VALUES)


def spec_strings(entries: list[dict[str, Any]], key: str, extra: list[dict[str, Any]]):
    """`name:key=value,...` with the registry's names and knobs, and now and then a stranger."""

    @st.composite
    def build(draw: st.DrawFn) -> str:
        entry = draw(st.sampled_from(entries))
        knobs = entry[key] + extra
        names = st.one_of(st.sampled_from([k["name"] for k in knobs] or ["x"]), st.text(max_size=6))
        pairs = draw(
            st.lists(st.tuples(names, knob_values(knobs)), max_size=4, unique_by=lambda p: p[0])
        )
        text = entry["name"]
        if pairs:
            text += ":" + ",".join(f"{k}={v}" for k, v in pairs)
        return text

    return build()


WORKLOAD_SPECS = spec_strings(WORKLOADS, "knobs", COMMON_KNOBS)
GOVERNOR_SPECS = spec_strings(GOVERNORS, "tunables", SYSTEM_TUNABLES)


@FUZZ
@given(platform=st.sampled_from(dvfslab.platforms.preset_ids()), workload=WORKLOAD_SPECS)
@example(platform=SMALL, workload="cpu-bound:threads=1,kthread_hz=1e-308")
@example(platform=SMALL, workload="cpu-bound:threads=1.5")
@example(platform=SMALL, workload="uibench:frames=1e7")
@example(platform=SMALL, workload="ffmpeg:frames=1e7")
@example(platform=SMALL, workload="gitsource:commands=1e7")
@example(platform=SMALL, workload="random-read:size_mb=65536")
@example(platform=SMALL, workload="seq-read:size_mb=1e8")
@example(platform=SMALL, workload="cpu-bound:threads=65536")
def test_any_workload_spec_runs_or_is_refused(platform: str, workload: str) -> None:
    answers_cleanly(
        lambda: dvfslab.simulate(platform, "schedutil", workload, duration_s=DURATION_S)
    )


@FUZZ
@given(platform=st.sampled_from(dvfslab.platforms.preset_ids()), governor=GOVERNOR_SPECS)
@example(platform=SMALL, governor="conservative:up_threshold=20,down_threshold=80")
@example(platform=SMALL, governor="intel_pstate:min_perf_pct=90,max_perf_pct=10")
@example(platform=SMALL, governor="schedutil:hz=123")
@example(platform=SMALL, governor="schedutil:kernel=2.6")
def test_any_governor_spec_runs_or_is_refused(platform: str, governor: str) -> None:
    answers_cleanly(
        lambda: dvfslab.simulate(platform, governor, "periodic:threads=2", duration_s=DURATION_S)
    )


# -- rt-app JSON -------------------------------------------------------------------------------

RTAPP_EVENTS = [
    "run", "runtime", "sleep", "timer", "barrier", "lock", "unlock", "wait", "signal",
    "broadcast", "sync", "suspend", "resume", "fork", "yield", "mem", "iorun", "delay",
]  # fmt: skip
RTAPP_TASK_KEYS = ["instance", "loop", "cpus", "phases", "priority", "policy", "delay", "taskgroup"]
RESOURCE_NAMES = st.sampled_from(["a", "b", "m", "t0", "t1", "q"])


def rtapp_values() -> st.SearchStrategy[Any]:
    numbers = st.one_of(
        st.integers(min_value=-2, max_value=20_000),
        st.sampled_from([-1, 0, 1, 15_000, 100_000_000, 1e8, 0.5, 1e-9]),
        st.floats(allow_nan=False, allow_infinity=False, width=32),
    )
    timer = st.fixed_dictionaries(
        {"ref": RESOURCE_NAMES, "period": numbers},
        optional={"mode": st.sampled_from(["relative", "absolute", "x"])},
    )
    return st.one_of(numbers, RESOURCE_NAMES, timer, st.lists(numbers, max_size=3), st.none())


@st.composite
def rtapp_events(draw: st.DrawFn) -> dict[str, Any]:
    keys = draw(st.lists(st.sampled_from(RTAPP_EVENTS + RTAPP_TASK_KEYS), max_size=6))
    return {k: draw(rtapp_values()) for k in keys}


@st.composite
def rtapp_documents(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True))
    tasks: dict[str, Any] = {}
    for name in names:
        task = draw(rtapp_events())
        if draw(st.booleans()):
            task["phases"] = {f"p{i}": draw(rtapp_events()) for i in range(draw(st.integers(1, 3)))}
        if draw(st.booleans()):
            task["fork"] = draw(st.sampled_from(names))
        tasks[name] = task
    doc: dict[str, Any] = {"tasks": tasks}
    if draw(st.booleans()):
        doc["global"] = {
            "duration": draw(st.one_of(st.integers(-1, 2), st.floats(0, 1))),
            "calibration": draw(st.sampled_from(["CPU0", "CPU7", 100, -3, "x"])),
        }
    return doc


@FUZZ
@given(doc=rtapp_documents())
@example(doc={"tasks": {"a": {"fork": "a", "sleep": 1000, "loop": -1}}})
@example(doc={"tasks": {"c": {"fork": "c"}}, "global": {"duration": 0, "calibration": 100}})
@example(doc={"tasks": {"a": {"instance": 15000, "run": 10, "sleep": 1000}}})
@example(doc={"tasks": {"a": {"instance": 100_000_000, "run": 10}}})
@example(doc={"tasks": {"a": {"unlock": "m", "run": 10}}})
def test_any_rtapp_document_runs_or_is_refused(doc: dict[str, Any], tmp_path_factory) -> None:
    path = Path(tmp_path_factory.mktemp("rtapp")) / "fuzz.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    answers_cleanly(lambda: dvfslab.simulate("juno-r2", "schedutil", path, duration_s=DURATION_S))


@FUZZ
@given(text=st.text(alphabet='{}[]":,0123456789 ntrufals-.e\\', max_size=60))
def test_any_text_as_rtapp_json_is_refused_or_runs(text: str, tmp_path_factory) -> None:
    path = Path(tmp_path_factory.mktemp("rtapp")) / "noise.json"
    path.write_text(text, encoding="utf-8")
    answers_cleanly(lambda: dvfslab.simulate(SMALL, "performance", path, duration_s=DURATION_S))


# -- platform presets --------------------------------------------------------------------------


def shipped_preset(preset_id: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(dvfslab.platforms.load_platform(preset_id)[0])
    return doc


PRESETS = {p: shipped_preset(p) for p in dvfslab.platforms.preset_ids()}
# Each draw is a fresh copy: a list shared between draws could be put inside itself.
ODD_VALUES = st.one_of(
    st.sampled_from([[], {}, None, "", 0, -1, 1e308, -1e-9, [0], [[]], True]).map(copy.deepcopy),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=False),
)


def paths_of(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path in a JSON document (lists by index, at most the first 3 items)."""
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += paths_of(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node[:3]):
            out += paths_of(v, (*prefix, i))
    return out


@st.composite
def mutated_presets(draw: st.DrawFn) -> dict[str, Any]:
    """A shipped preset with one to three fields deleted or replaced by an odd value."""
    doc = copy.deepcopy(PRESETS[draw(st.sampled_from(sorted(PRESETS)))])
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths_of(doc)[1:]))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        if draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(ODD_VALUES)
        if not paths_of(doc)[1:]:
            break
    return doc


@FUZZ
@given(doc=mutated_presets())
@example(doc={**PRESETS[SMALL], "idle_states": []})
def test_any_mutated_preset_runs_or_is_refused(doc: dict[str, Any], tmp_path_factory) -> None:
    path = Path(tmp_path_factory.mktemp("preset")) / "box.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    answers_cleanly(
        lambda: dvfslab.simulate(path, "schedutil", "periodic:threads=2", duration_s=DURATION_S)
    )


# -- campaign files ----------------------------------------------------------------------------

CAMPAIGN = {
    "name": "fuzz",
    "platforms": [SMALL],
    "baseline": "a",
    "seed": 1,
    "iterations": 1,
    "duration_s": 0.01,
    "configs": {"a": "schedutil", "b": "performance"},
    "benchmarks": {"p": {"workload": "periodic", "sweep": {"threads": [1, 2]}}},
}


@st.composite
def mutated_campaigns(draw: st.DrawFn) -> dict[str, Any]:
    doc = copy.deepcopy(CAMPAIGN)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths_of(doc)[1:]))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        choice = draw(st.integers(0, 2))
        if choice == 0 and isinstance(parent, dict):
            del parent[path[-1]]
        elif choice == 1:
            parent[path[-1]] = draw(st.one_of(ODD_VALUES, st.text(max_size=8), WORKLOAD_SPECS))
        else:
            parent[path[-1]] = draw(st.one_of(GOVERNOR_SPECS, st.lists(st.integers(-3, 9))))
        if not paths_of(doc)[1:]:
            break
    return doc


@FUZZ
@given(doc=mutated_campaigns())
@example(doc={**CAMPAIGN, "duration_s": 1e308})
def test_any_mutated_campaign_is_checked_or_refused(doc: dict[str, Any], tmp_path_factory) -> None:
    base = Path(tmp_path_factory.mktemp("campaign"))

    def load_and_check() -> None:
        check_campaign(campaign_from_dict(doc, source="fuzz.toml", base_dir=base))

    try:
        load_and_check()
    except ConfigError:
        return
