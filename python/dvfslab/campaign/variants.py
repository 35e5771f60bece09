"""Model variants: the simulator with every constant it takes on trust drawn over its range.

The model's uncertain constants are declared where their values live, each with a plausible
range and its source: a preset's numbers written `{"value", "range", "source"}`
(docs/platform-format.md), and workload knobs with a declared range (`dvfslab workloads --json`).
A campaign iteration draws one variant, shared by every configuration and parameter of that
iteration on a platform, so that ratios compare like with like. The draw is a Latin hypercube
over the iterations: each constant's range is cut into as many equal strata as there are
iterations and every stratum is used once, in an order that is random per constant, which spreads
a handful of iterations over each range far better than independent draws.

A variant also varies what a real machine varies from one run to the next, by the run's seed:
when the tasks start relative to each other and to the tick (`phase_us`), and how much CPU work
each request takes (`work_jitter_pct`).

**Structural variants.** Where the sources admit more than one mechanism and the model has a
switch for it (the storage device behind a benchmark, say), a campaign's `[structural]` table
gives each alternative a weight and names the source (docs/campaign-format.md): the one place
that choice lives. Each iteration draws one alternative per platform and switch, by the same
Latin hypercube over the weights, shared by every benchmark the switch applies to (one machine
has one disk). The nominal model takes the alternative listed first.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from dvfslab import _core
from dvfslab.platforms import pointer_parent

SEED_VARIATION: tuple[tuple[str, float], ...] = (
    ("phase_us", 4000.0),
    ("work_jitter_pct", 5.0),
)
"""Common workload knobs a variant sets (unless the spec sets them), varied by the run's seed.

phase_us: tasks start up to one 250-Hz tick apart, the granularity at which a real run's start
lands on the tick at random. work_jitter_pct: each request's CPU work varies by +-5%, a spread
of the order of the run-to-run variation of a cache- and branch-predictor-bound request."""


@dataclass(frozen=True)
class Declared:
    """One constant the model takes on trust: where it lives, its value and plausible range."""

    kind: Literal["platform", "workload"]
    name: str
    """A preset constant's JSON Pointer ("/clusters/0/power/c_eff_nf"), or a knob's name."""
    value: float
    low: float
    high: float
    source: str
    integer: bool = False
    """Drawn in whole numbers (written as an integer in the preset, or an integer knob)."""

    def draw(self, quantile: float) -> float:
        """The value at `quantile` (0..1) of the range, uniform over it."""
        x = self.low + quantile * (self.high - self.low)
        return float(min(max(round(x), self.low), self.high)) if self.integer else x


def platform_constants(preset_json: str, source: str) -> list[Declared]:
    """The preset's declared constants, in document order."""
    info = json.loads(_core.describe_platform(preset_json, source))
    return [
        Declared(
            "platform",
            c["path"],
            float(c["value"]),
            float(c["range"][0]),
            float(c["range"][1]),
            c["source"],
            bool(c.get("integer", False)),
        )
        for c in info.get("uncertain", [])
    ]


def workload_constants(workload: str) -> list[Declared]:
    """The declared knobs of `workload`'s model (a spec) that the spec does not set itself."""
    name, params = split_spec(workload)
    knobs = _declared_knobs().get(name, [])
    return [k for k in knobs if k.name not in params]


def quantile(seed: int, name: str, iteration: int, iterations: int) -> float:
    """Where iteration `iteration` (1..iterations) of a campaign seeded `seed` draws the
    constant `name`: the Latin hypercube's stratum for this iteration, and a uniform point in it.

        stratum = permutation_name(iteration - 1),   q = (stratum + u) / iterations

    The permutation depends on the seed and the constant only, so every iteration of one campaign
    uses a different stratum; u on the iteration as well.
    """
    if not 1 <= iteration <= iterations:
        raise ValueError(f"iteration {iteration} is not within 1..{iterations}")
    strata = list(range(iterations))
    random.Random(_digest(seed, name)).shuffle(strata)
    u = random.Random(_digest(seed, name, iteration)).random()
    return (strata[iteration - 1] + u) / iterations


def variant_preset(
    preset_json: str, source: str, seed: int, iteration: int, iterations: int
) -> str:
    """The preset's text with each declared constant replaced by this iteration's draw (the
    declaration kept, so the simulator still checks the value against its range)."""
    constants = platform_constants(preset_json, source)
    if not constants:
        return preset_json
    doc = json.loads(preset_json)
    for c in constants:
        holder = _pointer(doc, c.name)
        value = c.draw(quantile(seed, f"platform:{c.name}", iteration, iterations))
        holder["value"] = int(value) if c.integer else value
    return json.dumps(doc, indent=1)


def variant_workload(workload: str, seed: int, iteration: int, iterations: int) -> str:
    """The workload spec with each declared knob it leaves unset drawn for this iteration, and
    the seed-driven variation knobs (`SEED_VARIATION`) it leaves unset."""
    name, params = split_spec(workload)
    extra = [
        f"{c.name}={knob_text(c.draw(quantile(seed, where, iteration, iterations)))}"
        for c in workload_constants(workload)
        for where in [f"workload:{name}:{c.name}"]
    ]
    extra += [f"{k}={knob_text(v)}" for k, v in SEED_VARIATION if k not in params]
    if not extra:
        return workload
    return f"{workload}{',' if params else ':'}{','.join(extra)}"


@dataclass(frozen=True)
class Structural:
    """A workload knob whose value is one of several mechanisms the sources admit, each with a
    weight, per platform (`by_platform`) or the same on every platform (`shared`)."""

    knob: str
    source: str
    benchmarks: tuple[str, ...]
    """The campaign's benchmarks it applies to."""
    shared: tuple[tuple[str, float], ...] = ()
    by_platform: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = ()

    def choices(self, platform: str) -> tuple[tuple[str, float], ...]:
        """(value, weight) pairs on `platform`, as listed; the first is the nominal one."""
        for name, choices in self.by_platform:
            if name == platform:
                return choices
        return self.shared

    def nominal(self, platform: str) -> str:
        return self.choices(platform)[0][0]

    def draw(self, platform: str, quantile: float) -> str:
        """The value at `quantile` (0..1) of the weights laid end to end in listed order."""
        choices = self.choices(platform)
        total = sum(w for _, w in choices)
        edge = 0.0
        for value, weight in choices:
            edge += weight / total
            if quantile < edge:
                return value
        return choices[-1][0]

    def variant(self, seed: int, platform: str, iteration: int, iterations: int) -> str:
        """This iteration's value on `platform`: one draw per platform and knob, shared by the
        benchmarks the switch applies to."""
        where = f"structural:{self.knob}:{platform}"
        return self.draw(platform, quantile(seed, where, iteration, iterations))

    def to_manifest(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "benchmarks": list(self.benchmarks)}
        if self.by_platform:
            out["by_platform"] = {p: dict(c) for p, c in self.by_platform}
        else:
            out["choices"] = dict(self.shared)
        return out


def with_structural(
    workload: str,
    structural: tuple[Structural, ...],
    benchmark: str,
    platform: str,
    draw: tuple[int, int, int] | None,
) -> str:
    """The workload spec with the value of each structural switch that applies to `benchmark`:
    the nominal one, or with `draw` = (seed, iteration, iterations) that iteration's."""
    values = {
        s.knob: s.variant(draw[0], platform, draw[1], draw[2]) if draw else s.nominal(platform)
        for s in structural
        if benchmark in s.benchmarks
    }
    if not values:
        return workload
    extra = ",".join(f"{k}={v}" for k, v in values.items())
    name, _, rest = workload.partition(":")
    return f"{workload},{extra}" if rest.strip() else f"{name}:{extra}"


def set_constants(preset_json: str, values: dict[str, float]) -> str:
    """The preset with the number at each JSON Pointer of `values` replaced. A declared constant
    keeps its declaration, its range moved with the value (the same relative width around it)."""
    doc = json.loads(preset_json)
    for pointer, number in values.items():
        parent, key = pointer_parent(doc, pointer)
        node = parent[key]
        written = node["value"] if isinstance(node, dict) else node
        # A whole number stays one where the file wrote one (an integer field must parse).
        value: float = int(number) if isinstance(written, int) and number == int(number) else number
        if isinstance(node, dict):
            old = float(node["value"])
            low, high = (float(x) for x in node["range"])
            scale = value / old if old else 1.0
            node["range"] = sorted([low * scale, high * scale]) if old else [low, high]
            node["value"] = value
        else:
            parent[key] = value
    return json.dumps(doc, indent=1)


def with_knobs(workload: str, values: dict[str, float]) -> str:
    """The workload spec with each knob of `values` set (replacing the spec's own value)."""
    name, _, rest = workload.partition(":")
    items = [item for item in rest.split(",") if item.strip()]
    kept = [item for item in items if item.partition("=")[0].strip() not in values]
    kept += [f"{knob}={knob_text(value)}" for knob, value in values.items()]
    return f"{name}:{','.join(kept)}" if kept else name


# -- helpers -----------------------------------------------------------------------------------


@cache
def _declared_knobs() -> dict[str, list[Declared]]:
    """Each workload's knobs with a declared range, the common ones included."""
    common = json.loads(_core.common_workload_knobs())
    out: dict[str, list[Declared]] = {}
    for w in json.loads(_core.workloads()):
        out[w["name"]] = [
            Declared(
                "workload",
                k["name"],
                float(k["default"]),
                float(k["range"][0]),
                float(k["range"][1]),
                k["source"],
                bool(k.get("integer", False)),
            )
            for k in [*w["knobs"], *common]
            if k.get("range") is not None
        ]
    return out


def split_spec(workload: str) -> tuple[str, set[str]]:
    """A spec's name and the knobs it sets."""
    name, _, rest = workload.partition(":")
    params = {item.partition("=")[0].strip() for item in rest.split(",") if item.strip()}
    return name.strip(), params


def _pointer(doc: Any, pointer: str) -> dict[str, Any]:
    """The declared constant a JSON Pointer names inside `doc`."""
    parent, key = pointer_parent(doc, pointer)
    node = parent[key]
    if not isinstance(node, dict) or "value" not in node:
        raise _core.ConfigError(f"{pointer}: not a declared constant of the preset")
    return node


def knob_text(value: float) -> str:
    """A knob value as a spec writes it: whole numbers without a fraction, others in full."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _digest(*parts: object) -> int:
    text = json.dumps(["dvfslab-variant/1", *parts])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
