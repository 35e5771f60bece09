"""Fuzzing the inputs that came after the first fuzzing pass: recorded traces (read and
replayed), a recording's manifest, Python governors' settings, the tuner's parameters and the
Gymnasium environment's settings and actions.

Whatever the input, the answer is a result or a `ConfigError` (a `DvfsError` at worst, a
`ValueError` where gymnasium's own contract asks for one): never another exception, a panic or
a hang. `DVFSLAB_FUZZ_EXAMPLES` sets the cases per target, as in tests/test_fuzz.py
(docs/robustness.md gives the long run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

import dvfslab
from dvfslab import ConfigError, DvfsError
from dvfslab.recordings import load_recording
from dvfslab.traces.read import parse_text
from test_fuzz import FUZZ

TRACES = Path(__file__).parent / "data" / "traces"
JUNO = (TRACES / "lisa-juno-trace.txt").read_text().splitlines()
STEPPER = Path(__file__).parent.parent / "examples" / "stepper.py"

# Pieces a mutated trace line is made of: the kernel's, and what breaks them.
NUMBERS = st.sampled_from(
    ["0", "-1", "1e300", "nan", "inf", "99999999", "4294967295", "3.5", "", "0x10", "1.000001"]
)
TOKENS = st.sampled_from(
    [
        "sched_switch:",
        "sched_waking:",
        "sched_wakeup:",
        "sched_process_fork:",
        "cpu_frequency:",
        "cpu_idle:",
        "[LOST 3 EVENTS]",
        "prev_state=ZZZZ",
        "prev_state=R+",
        "target_cpu=999999",
        "cpu_id=-5",
        "d.s2.",
        "cpus=4000000000",
        "# tsc_khz=0",
        "==>",
        "[000]",
        "[99999999]",
    ]
)


@st.composite
def mutated_trace(draw: Any) -> str:
    """A slice of a real trace with some lines cut, repeated, reordered or rewritten."""
    start = draw(st.integers(0, len(JUNO) - 1))
    lines = JUNO[start : start + draw(st.integers(0, 80))]
    for _ in range(draw(st.integers(0, 6))):
        if not lines:
            break
        k = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["number", "token", "cut", "swap", "dup"]))
        words = lines[k].split(" ")
        if op == "number":
            words[draw(st.integers(0, len(words) - 1))] = draw(NUMBERS)
            lines[k] = " ".join(words)
        elif op == "token":
            words.insert(draw(st.integers(0, len(words))), draw(TOKENS))
            lines[k] = " ".join(words)
        elif op == "cut":
            lines[k] = lines[k][: draw(st.integers(0, len(lines[k])))]
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[k], lines[j] = lines[j], lines[k]
        else:
            lines.insert(k, lines[k])
    return "\n".join(lines) + "\n"


@FUZZ
@given(mutated_trace())
def test_any_mutated_trace_is_read_or_refused(text: str) -> None:
    try:
        trace = parse_text(text, "fuzz.txt")
    except ConfigError:
        return
    assert trace.cpus >= 0
    trace.summary()


@FUZZ
@given(text=mutated_trace())
def test_any_mutated_trace_replays_or_is_refused(tmp_path_factory: Any, text: str) -> None:
    path = tmp_path_factory.mktemp("trace") / "t.txt"
    path.write_text(text)
    try:
        r = dvfslab.simulate("juno-r2", "performance", f"trace:{path}", duration_s=0.05)
    except ConfigError:
        return
    assert r.sim_time_s > 0


KEYS = st.sampled_from(
    [
        "up",
        "sampling_ms",
        "rate_limit_us",
        "trigger",
        "__dict__",
        "_x",
        "kernel",
        "eas",
        "hz",
        "nope",
    ]
)
VALUES = st.sampled_from(
    ["0", "-1", "1e-9", "nan", "inf", "0.5", "10", "bogus", "scheduler", "sampling", "1e308", ""]
)


@FUZZ
@given(st.lists(st.tuples(KEYS, VALUES), max_size=4))
def test_any_python_governor_settings_run_or_are_refused(pairs: list[tuple[str, str]]) -> None:
    spec = f"python:{STEPPER}:Stepper" + "".join(f",{k}={v}" for k, v in pairs)
    try:
        r = dvfslab.simulate("juno-r2", spec, "periodic:threads=2", duration_s=0.05)
    except ConfigError:
        return
    assert r.sim_time_s > 0


@FUZZ
@given(
    st.text(alphabet=st.sampled_from(list("rate_limit_us=0123456789.:.,logabc-e ")), max_size=40)
)
def test_any_tune_parameter_is_parsed_or_refused(text: str) -> None:
    from dvfslab.tune import parse_param

    try:
        param = parse_param(text, {"rate_limit_us"})
    except ConfigError:
        return
    assert param.name


MANIFEST_KEYS = st.sampled_from(
    ["workload", "window_s", "window_start_s", "operations", "platform", "roles", "name", "x"]
)
MANIFEST_VALUES = st.sampled_from(
    ['"tbench:clients=2"', "0", "-1", "1e308", '"nan"', "true", "[1, 2]", '{a = "("}', '"x"']
)


@FUZZ
@given(changes=st.dictionaries(MANIFEST_KEYS, MANIFEST_VALUES, max_size=5))
def test_any_mutated_manifest_is_loaded_or_refused(
    tmp_path_factory: Any, changes: dict[str, str]
) -> None:
    shipped = load_recording("hackbench-pipe")
    folder = tmp_path_factory.mktemp("rec")
    lines = [
        line
        for line in shipped.trace_path.with_name("hackbench-pipe.toml").read_text().splitlines()
        if line.split(" = ")[0] not in changes
    ]
    head = [f"{k} = {v}" for k, v in changes.items() if k != "roles"]
    (folder / "r.toml").write_text("\n".join(head + lines) + "\n")
    (folder / "r.txt.xz").write_bytes(shipped.trace_path.read_bytes())
    try:
        rec = load_recording(folder / "r.toml")
    except ConfigError:
        return
    assert rec.roles


@FUZZ
@given(
    decision_ms=st.sampled_from([1e-9, 0.0, -1.0, float("nan"), 0.5, 5.0, 20.0, 1e9]),
    action=st.lists(st.integers(-3, 40), min_size=0, max_size=4),
)
def test_any_environment_setting_and_action_steps_or_is_refused(
    decision_ms: float, action: list[int]
) -> None:
    from dvfslab.gym import DvfsEnv

    try:
        env = DvfsEnv("juno-r2", "periodic:threads=2", duration_s=0.02, decision_ms=decision_ms)
        env.reset(seed=0)
        step = env.step(action)
    except (ConfigError, DvfsError, ValueError):
        return
    reward = step[1]
    assert reward == reward  # not NaN
