"""The shape of a campaign file (docs/campaign-format.md) as pydantic models.

pydantic checks every key's presence, type and range; `first_error` turns its first complaint
into one line naming the file, the key path as TOML spells it and what was expected:

    campaign.toml: benchmarks.periodic.sweep.threads[1]: expected a number or a string
    without , : =, got true (a boolean)

What needs more than the file (known governors, workloads and their knobs, platform presets,
names that refer to each other) is checked in `dvfslab.campaign.check` after this.

No `from __future__ import annotations` and no `X | None`: pydantic reads these annotations at
run time, on every Python the package supports.
"""

import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Optional, Union

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    StringConstraints,
    Tag,
    ValidationError,
)
from pydantic_core import ErrorDetails

from dvfslab.api import SEED_MAX
from dvfslab.campaign.key_errors import child, describe

ITERATIONS_MAX = 10_000
SPEC_RESERVED = ",:="
"""Characters that would break a `name:key=value,...` spec."""


@dataclass(frozen=True)
class Expect:
    """What a value should be, as an error says it: `expected <what>, got ...`."""

    what: str


def _kind(tags: dict[type, str]) -> Any:
    """A discriminator picking a union's branch by the value's Python type (bool is no int)."""

    def pick(value: object) -> Optional[str]:
        if isinstance(value, bool):
            return None
        return next((tag for t, tag in tags.items() if isinstance(value, t)), None)

    return pick


Text = Annotated[str, StringConstraints(pattern=r"\S")]
"""A string that is not blank."""
Name = Annotated[
    str,
    StringConstraints(pattern=r"^[\w-][\w.-]*$"),
    Expect("a name of letters, digits, '.', '_' or '-'"),
]
# From 1 ns (what a run can simulate) to the longest a run's u64 nanoseconds hold.
SECONDS_MIN, SECONDS_MAX = 1e-9, 1.8e10
Seconds = Annotated[
    float,
    Field(ge=SECONDS_MIN, le=SECONDS_MAX, allow_inf_nan=False),
    Expect(f"a number of seconds > 0, from {SECONDS_MIN:g} (1 ns) to {SECONDS_MAX:g}"),
]
Iterations = Annotated[
    int, Field(ge=1, le=ITERATIONS_MAX), Expect(f"an integer in 1..{ITERATIONS_MAX}")
]
PlatformIds = Annotated[
    list[Annotated[Text, Expect("a platform id")]],
    Field(min_length=1),
    Expect("a non-empty list of platform ids"),
]

SweepValue = Annotated[
    Union[
        Annotated[int, Tag("int")],
        Annotated[float, Tag("float")],
        Annotated[str, StringConstraints(pattern=rf"^[^{SPEC_RESERVED}]+$"), Tag("str")],
    ],
    Discriminator(_kind({int: "int", float: "float", str: "str"})),
    Expect(f"a number or a string without {' '.join(SPEC_RESERVED)}"),
]
SweepList = Annotated[
    list[SweepValue],
    Field(min_length=1),
    Expect("a non-empty list of numbers or strings"),
]
Sweep = Annotated[
    Union[
        Annotated[SweepList, Tag("list")],
        Annotated[dict[str, SweepList], Tag("table")],
    ],
    Discriminator(_kind({list: "list", dict: "table"})),
    Expect("a non-empty list of numbers or strings, or a table of platform = [values]"),
]


class _Table(BaseModel):
    """A TOML table: no unknown key, no conversion (a "3" is not 3, true is not 1)."""

    model_config = ConfigDict(extra="forbid", strict=True)


def _table_of(key: str) -> Any:
    """`name = "spec"` is short for `name = { key = "spec" }`."""
    return BeforeValidator(lambda v: {key: v} if isinstance(v, str) and v.strip() else v)


class ConfigTable(_Table):
    governor: Annotated[Text, Expect("a governor spec such as 'schedutil:rate_limit_us=0'")]
    platforms: Optional[PlatformIds] = None


KernelVersion = Annotated[
    str,
    StringConstraints(pattern=r"^[0-9]+\.[0-9]+(\.[0-9]+)?$"),
    Expect("a kernel version as a string, such as '5.4' or '6.18.44'"),
]


class BenchmarkTable(_Table):
    workload: Annotated[Text, Expect("a workload spec such as 'periodic'")]
    sweep: Optional[Annotated[dict[str, Sweep], Expect("a table of knob = [values]")]] = None
    duration_s: Optional[Seconds] = None
    iterations: Optional[Iterations] = None
    platforms: Optional[PlatformIds] = None
    kernel: Optional[KernelVersion] = None


Value = Annotated[float, Field(allow_inf_nan=False), Expect("a number")]


class CrossValidateTable(_Table):
    """`[cross_validate]`: the constants fitted on the campaign's published cells."""

    fitted_on_one: Optional[
        Annotated[
            dict[str, dict[str, Value]],
            Expect("a table of platform = { constant = value before the fit }"),
        ]
    ] = None
    fitted_on_all: Optional[
        Annotated[
            dict[str, Annotated[list[Value], Field(min_length=2)]],
            Expect("a table of 'workload:knob' = [at least two candidate values]"),
        ]
    ] = None


Weight = Annotated[float, Field(gt=0, allow_inf_nan=False), Expect("a weight > 0")]
Choices = Annotated[
    dict[str, Weight],
    Field(min_length=1),
    Expect("a table of value = weight, the nominal value first"),
]


class StructuralTable(_Table):
    """`[structural.KNOB]`: the alternatives of a workload switch the sources admit."""

    source: Annotated[Text, Expect("where the alternatives and their weights come from")]
    benchmarks: Annotated[
        list[Annotated[Text, Expect("a benchmark id")]],
        Field(min_length=1),
        Expect("a non-empty list of the benchmarks it applies to"),
    ]
    choices: Optional[Choices] = None
    by_platform: Optional[
        Annotated[dict[str, Choices], Expect("a table of platform = { value = weight }")]
    ] = None


class CampaignFile(_Table):
    platforms: Annotated[
        list[Annotated[Text, Expect("a preset id")]],
        Field(min_length=1),
        Expect("a non-empty list of platform preset ids or files"),
    ]
    configs: Annotated[
        dict[
            str,
            Annotated[
                ConfigTable,
                _table_of("governor"),
                Expect("a governor spec such as 'schedutil:rate_limit_us=0', or a table"),
            ],
        ],
        Field(min_length=1),
        Expect("a table of at least one name = governor spec"),
    ]
    benchmarks: Annotated[
        dict[
            str,
            Annotated[
                BenchmarkTable,
                _table_of("workload"),
                Expect("a workload spec such as 'periodic', or a table"),
            ],
        ],
        Field(min_length=1),
        Expect("a table of at least one id = { workload = ..., sweep = ... }"),
    ]
    baseline: Annotated[Text, Expect("the name of a config")]
    name: Optional[Name] = None
    description: Annotated[str, Expect("a string")] = ""
    seed: Annotated[int, Field(ge=0, le=SEED_MAX), Expect(f"an integer in 0..{SEED_MAX}")] = 0
    iterations: Iterations = 1
    duration_s: Optional[Seconds] = None
    nominal: Annotated[StrictBool, Expect("true or false")] = False
    cross_validate: Optional[CrossValidateTable] = None
    structural: Optional[
        Annotated[dict[str, StructuralTable], Expect("a table of knob = { source, ... }")]
    ] = None


def first_error(e: ValidationError, source: str) -> str:
    """pydantic's first complaint as `source: key.path: expected ..., got ...`."""
    error = e.errors()[0]
    path, model, what = _follow(CampaignFile, error["loc"])
    kind = error["type"]
    if kind == "missing":
        parent = _follow(CampaignFile, error["loc"][:-1])[0]
        message = f"missing key '{error['loc'][-1]}'"
        return f"{source}: {parent}: {message}" if parent else f"{source}: {message}"
    if kind == "extra_forbidden":
        known = ", ".join(model.model_fields) if model else ""
        return f"{source}: {path}: unknown key (known here: {known})"
    got = describe(error["input"])
    if kind == "too_short":
        got = "an empty table" if isinstance(error["input"], dict) else "an empty list"
    return f"{source}: {path}: expected {what or _plain(error)}, got {got}"


def _plain(error: ErrorDetails) -> str:
    return error["msg"][0].lower() + error["msg"][1:]


def _follow(
    annotation: Any, loc: tuple[Union[int, str], ...]
) -> tuple[str, Optional[type[BaseModel]], Optional[str]]:
    """Walk `loc` down the type: the key path as TOML spells it (union branch tags left out),
    the last table model passed, and the innermost `Expect` on the way."""
    path, model, what = "", None, None
    rest = list(loc)
    while True:
        annotation, expect, tags = _unwrap(annotation)
        what = expect or what
        if not rest:
            return path, model, what
        if tags is not None:
            branch = tags.get(str(rest[0]))
            if branch is None:
                return path, model, what
            rest.pop(0)
            annotation = branch
            continue
        key = rest.pop(0)
        origin = typing.get_origin(annotation)
        path = child(path, key)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            model = annotation
            field = annotation.model_fields.get(str(key))
            if field is None:
                return path, model, None
            # pydantic keeps a field's Annotated extras (Field limits, Expect) in its metadata
            annotation = field.annotation
            if field.metadata:
                annotation = Annotated[(annotation, *field.metadata)]
            what = None
        elif origin in (list, dict):
            annotation = typing.get_args(annotation)[-1]
        else:
            return path, model, what


def _unwrap(annotation: Any) -> tuple[Any, Optional[str], Optional[dict[str, Any]]]:
    """An annotation without Annotated and Optional: the type, its Expect, and its branches by
    tag if it is a tagged union."""
    expect = None
    while True:
        origin = typing.get_origin(annotation)
        if origin is Annotated:
            inner, *meta = typing.get_args(annotation)
            expect = next((m.what for m in meta if isinstance(m, Expect)), None) or expect
            annotation = inner
        elif origin in _UNIONS and type(None) in typing.get_args(annotation):
            annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
        elif origin in _UNIONS:
            return annotation, expect, {_tag(a): a for a in typing.get_args(annotation)}
        else:
            return annotation, expect, None


_UNIONS = (Union, getattr(types, "UnionType", Union))


def _tag(annotation: Any) -> str:
    return next(m.tag for m in typing.get_args(annotation)[1:] if isinstance(m, Tag))
