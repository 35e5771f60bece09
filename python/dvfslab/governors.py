"""Governors written in Python: subclass `Governor`, and the simulator calls it where it calls a
built-in governor, applies its answer through the same cpufreq core and driver, and records it
with `explain=True` (docs/research.md).

    class Stepper(dvfslab.Governor):
        trigger = "sampling"
        sampling_ms = 10
        def update(self, policy):
            busy = max(policy.busy_s) / (max(policy.busy_s) + min(policy.idle_s) or 1)
            i = policy.table_khz.index(policy.cur_khz)
            i = min(i + 1, len(policy.table_khz) - 1) if busy > 0.8 else max(i - 1, 0)
            return policy.table_khz[i]

    dvfslab.simulate("pixel6", Stepper(), "periodic:threads=4", duration_s=2)

A spec names one too: "python:MODULE:CLASS,key=value,...", MODULE importable (the current
directory included) or a file path; each key is a class attribute to set (a tunable) or one of
the system keys every governor takes (kernel=, invariant=, hz=, driver=...). An instance takes
the same keys as keywords: `Stepper(up=0.6, kernel="6.8", hz=1000)`.

EAS: Linux runs energy-aware placement only while schedutil governs every policy
(sched_is_eas_possible), so a run under a Python governor places tasks without it, whatever
`eas=` says (`eas=1` warns), unless the class declares itself a schedutil variant with
`enables = ("eas", "fast_switch")`: it then runs as schedutil would be run, EAS included.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import math
import numbers
import re
import sys
import warnings
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from dvfslab import _core
from dvfslab._core import ConfigError

if TYPE_CHECKING:
    from dvfslab._core import Policy

PYTHON_PREFIX = "python:"
"""A governor spec "python:MODULE:CLASS,..." names a `Governor` subclass."""

KERNEL_PREFIX = "kernel:"
"""A governor spec "kernel:PATH,..." names a kernel governor source file, or a kernel tree
(its kernel/sched/cpufreq_schedutil.c), built against dvfslab's kernel shim
(docs/kernel-governors.md)."""

SCHEDUTIL_IN_TREE = "kernel/sched/cpufreq_schedutil.c"

BASE_GOVERNOR = "performance"
"""The registry governor whose system settings a Python governor's run takes; its own
decisions never run (each policy's governor is replaced before the run starts)."""

SCHEDUTIL_BASE = "schedutil"
"""The base of a Python governor that declares `enables = ("eas", "fast_switch")`: the
registry's one governor that turns both on, as Linux's schedutil is the one `sugov_is_governor`
names."""

ENABLES = ("eas", "fast_switch")
"""What a governor may turn on around it (the built-in governors' `GovernorInfo::enables`)."""


class Governor:
    """Base class of a governor written in Python. Each policy gets its own copy of the
    instance (`copy.deepcopy`), so instance attributes are per-policy state."""

    trigger: str = "sampling"
    """"sampling": `update` runs every `sampling_ms` of simulated time (as ondemand's timer);
    "scheduler": at every utilisation change of a CPU of the policy (where schedutil runs),
    but not within `rate_limit_us` of the last change of the requested frequency (resolved
    to the table), as schedutil counts its rate limit since Linux 4.12."""
    sampling_ms: float = 10.0
    rate_limit_us: float = 0.0
    enables: tuple[str, ...] = ()
    """What the governor turns on around it, as a built-in one declares: () or ("eas",
    "fast_switch") for a schedutil variant, which then gets energy-aware placement where
    schedutil would (Linux builds perf domains only under schedutil, and schedutil asks the
    driver to fast-switch: the two come together)."""

    def __init__(self, **settings: Any) -> None:
        """Tunables (class attributes) and system keys (kernel=, invariant=, hz=, eas=...) to
        set, as a "python:" spec's keys: `Stepper(up=0.6, kernel="6.8")`."""
        system = system_keys()
        cls = type(self)
        self._system_settings: dict[str, str] = {}
        for key, value in settings.items():
            if key in system:
                self._system_settings[key] = _setting_text(value)
            elif hasattr(cls, key) and not callable(getattr(cls, key)):
                setattr(self, key, value)
            else:
                raise ConfigError(_unknown_key(cls.__name__, key, cls, system))

    def start(self, policy: Policy) -> None:
        """Called once when the governor starts on the policy."""

    def update(self, policy: Policy) -> int | None:
        """The frequency to ask for, or None to leave it: kHz, an int or a float, resolved as
        cpufreq resolves a request: rounded up to whole kHz, clamped to [min_khz, max_khz],
        then the lowest table entry at or above it (CPUFREQ_RELATION_L). Above
        `cpuinfo_max_khz` it is clamped with a RuntimeWarning (once a run)."""
        raise NotImplementedError(f"{type(self).__name__} must define update(self, policy)")


def with_settings(spec: str, settings: str) -> str:
    """The governor spec `spec` with `settings` ("key=value,...") added after its own."""
    if ":" in spec:  # a spec with settings already, or a python: one
        return f"{spec},{settings}"
    return f"{spec}:{settings}"


def system_keys() -> set[str]:
    """The system keys every governor takes (kernel=, invariant=, hz=, eas=, driver=...)."""
    return {k["name"] for k in json.loads(_core.system_tunables())}


def eas_off(spec: str, system: str, who: str, stacklevel: int = 3) -> str:
    """The built-in governor `spec` with the system keys `system` and EAS off: what a run
    takes when `who` (a Python governor, the Gymnasium agent) decides for a policy, since
    Linux runs EAS only while schedutil governs every policy (sched_is_eas_possible). An
    `eas=` other than 0 among the keys is dropped with a warning, not ignored in silence."""
    name, _, own = spec.partition(":")
    kept = []
    for item in filter(None, (s.strip() for s in [*own.split(","), *system.split(",")])):
        key, _, value = item.partition("=")
        if key != "eas":
            kept.append(item)
        elif value.strip() not in ("0", "0.0"):
            warnings.warn(
                f"{item}: EAS is off under {who}: Linux runs energy-aware placement only while "
                "schedutil governs every policy; compare with schedutil:eas=0 for the same "
                "placement",
                RuntimeWarning,
                stacklevel=stacklevel,
            )
    return f"{name}:{','.join([*kept, 'eas=0'])}"


TRIGGERS = ("sampling", "scheduler")
SAMPLING_MS_MIN = 1e-6
"""1 ns: a shorter period rounds to 0 ns, and the governor would be called forever at t=0."""


def resolve(governor: str | Governor) -> tuple[str, tuple[str, Governor] | None]:
    """(the spec `_core.simulate` takes, and for a Python governor its name and instance).

    Raises ConfigError, naming the governor, for a module that cannot be loaded, a class that
    cannot be created with no arguments or copied (each policy gets a `copy.deepcopy`), and
    settings out of range (`check_settings`)."""
    if isinstance(governor, Governor):
        name = type(governor).__name__
        check_settings(name, governor)
        _check_copyable(name, governor)
        settings = getattr(governor, "_system_settings", {})
        keys = ",".join(f"{k}={v}" for k, v in settings.items())
        return _base_spec(name, governor, keys), (name, governor)
    if not isinstance(governor, str) or not governor.startswith(PYTHON_PREFIX):
        return governor, None
    target, _, settings = governor[len(PYTHON_PREFIX) :].partition(",")
    module_name, _, class_name = target.rpartition(":")
    if not module_name or not class_name:
        raise ConfigError(
            f"governor {governor!r}: expected python:MODULE:CLASS[,key=value,...], e.g. "
            "python:mygovs:Stepper,sampling_ms=4"
        )
    cls = _load_class(governor, module_name, class_name)
    instance = _create(governor, cls)
    system: list[str] = []
    known_system = system_keys()
    for item in filter(None, (s.strip() for s in settings.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ConfigError(f"governor {governor!r}: expected key=value, got {item!r}")
        if key in known_system:
            system.append(item)
        elif not key.startswith("_") and hasattr(cls, key) and not callable(getattr(cls, key)):
            setattr(instance, key, _value(governor, key, value, getattr(cls, key)))
        else:
            raise ConfigError(
                f"governor {governor!r}: " + _unknown_key(class_name, key, cls, known_system)
            )
    check_settings(governor, instance)
    _check_copyable(governor, instance)
    own = getattr(instance, "_system_settings", {})
    system = [*(f"{k}={v}" for k, v in own.items()), *system]
    return _base_spec(governor, instance, ",".join(system)), (governor, instance)


def _base_spec(name: str, instance: Governor, system: str) -> str:
    """The registry spec whose system settings (and what its governor turns on) the run of
    `instance` takes: schedutil's for a declared schedutil variant, EAS kept as `eas=` says;
    else performance's, EAS off."""
    if tuple(sorted(map(str, instance.enables))) == ENABLES:
        return f"{SCHEDUTIL_BASE}:{system}" if system else SCHEDUTIL_BASE
    return eas_off(BASE_GOVERNOR, system, "a Python governor", stacklevel=4)


def _unknown_key(class_name: str, key: str, cls: type, system: set[str]) -> str:
    tunables = [k for k in vars(cls) if not k.startswith("_") and not callable(getattr(cls, k))]
    known = ", ".join(sorted({*tunables, "trigger", "sampling_ms", "rate_limit_us", "enables"}))
    return (
        f"{key}: not a tunable of {class_name} (its tunables: {known}; system keys: "
        f"{', '.join(sorted(system))})"
    )


def _setting_text(value: Any) -> str:
    """A keyword's value as a spec writes it: True is 1."""
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def check_settings(name: str, instance: Governor) -> None:
    """A ConfigError naming `name` and the setting if `trigger`, `sampling_ms` or
    `rate_limit_us` is out of range: sampling_ms of at least 1 ns, rate_limit_us >= 0, both
    finite numbers."""
    enables = getattr(instance, "enables", ())
    collection = isinstance(enables, (tuple, list, set, frozenset))
    if not collection or tuple(sorted(map(str, enables))) not in ((), ENABLES):
        raise ConfigError(
            f"governor {name!r}: enables: expected () or ('eas', 'fast_switch') (a schedutil "
            f"variant: Linux's one governor that turns either on turns on both), got {enables!r}"
        )
    trigger = getattr(instance, "trigger", None)
    if trigger not in TRIGGERS:
        raise ConfigError(
            f"governor {name!r}: trigger: expected {' or '.join(map(repr, TRIGGERS))}, "
            f"got {trigger!r}"
        )
    for key, lowest, expected in (
        ("sampling_ms", SAMPLING_MS_MIN, f"a number of ms >= {SAMPLING_MS_MIN:g} (1 ns)"),
        ("rate_limit_us", 0.0, "a number of us >= 0"),
    ):
        value = getattr(instance, key, None)
        if (
            isinstance(value, bool)
            or not isinstance(value, numbers.Real)
            or not math.isfinite(value)
            or value < lowest
        ):
            raise ConfigError(f"governor {name!r}: {key}: expected {expected}, got {value!r}")


def _create(spec: str, cls: type[Governor]) -> Governor:
    """`cls()`; what it raises, as a ConfigError naming the spec."""
    try:
        return cls()
    except Exception as e:
        raise ConfigError(
            f"governor {spec!r}: {cls.__name__}() raised {_exception(e)}; the simulator "
            "creates the class with no arguments: give it settings as class attributes "
            f"(python:MODULE:{cls.__name__},key=value)"
        ) from None


def _check_copyable(name: str, instance: Governor) -> None:
    """Each policy runs its own `copy.deepcopy` of the instance: fail now, with a ConfigError,
    if it cannot be copied."""
    import copy

    try:
        copy.deepcopy(instance)
    except Exception as e:
        raise ConfigError(
            f"governor {name!r}: the instance cannot be copied ({_exception(e)}); each policy "
            "runs its own copy.deepcopy of it: create what cannot be copied (locks, files, "
            "sockets) in start()"
        ) from None


def _exception(e: BaseException) -> str:
    """ "TypeError: message", on one line."""
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def source_digest(spec: str) -> str:
    """SHA-256 of the source file of the module a "python:" spec names: what a stored result
    of it depends on besides the spec. The file is found, not run."""
    module_name = spec[len(PYTHON_PREFIX) :].partition(",")[0].rpartition(":")[0]
    if module_name.endswith(".py"):
        source: str | None = module_name
    else:
        if "" not in sys.path:
            sys.path.insert(0, "")
        try:
            found = importlib.util.find_spec(module_name)
        except (ImportError, ValueError):
            found = None
        source = found.origin if found is not None else None
    if source is None or not Path(source).is_file():
        raise ConfigError(f"governor {spec!r}: no source file for {module_name}")
    return hashlib.sha256(Path(source).read_bytes()).hexdigest()


def with_setting(spec: str, key: str, value: str) -> str:
    """The governor spec with `key=value` among its settings, replacing the spec's own value:
    after the name ("schedutil:invariant=0,kernel=5.4"), or after the target of a "python:"
    or "kernel:" spec, whose own colons are no separator ("python:mygovs:Stepper,kernel=5.4")."""
    if spec.startswith((PYTHON_PREFIX, KERNEL_PREFIX)):
        head, _, rest = spec.partition(",")
        joiner = ","
    else:
        head, _, rest = spec.partition(":")
        joiner = ":"
    items = [i for i in rest.split(",") if i.strip() and i.partition("=")[0].strip() != key]
    return head + joiner + ",".join([*items, f"{key}={value}"])


def kernel_source_digest(spec: str) -> str:
    """SHA-256 of the governor file a "kernel:" spec names (a tree: its schedutil file): what
    a stored result of it depends on besides the spec and the simulator."""
    path_text = spec[len(KERNEL_PREFIX) :].partition(",")[0].strip()
    path_text = path_text.removeprefix("path=")
    path = Path(path_text)
    if path.is_dir():
        path = path / SCHEDUTIL_IN_TREE
    if not path.is_file():
        raise ConfigError(f"governor {spec!r}: path: no file {path}")
    digest = hashlib.sha256(path.read_bytes())
    for companion in _kernel_companions(path):
        digest.update(companion.name.encode() + b"\0" + companion.read_bytes())
    return digest.hexdigest()


def _kernel_companions(path: Path) -> list[Path]:
    """The files of a governor file's folder its build reads too: the headers it includes
    with quotes, theirs, and cpufreq_governor.c beside cpufreq_governor.h (the DBS governors)."""
    found: list[Path] = []
    queue = [path]
    while queue:
        text = queue.pop().read_text(errors="replace")
        for name in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
            names = [name, "cpufreq_governor.c"] if name == "cpufreq_governor.h" else [name]
            for candidate in (path.parent / n for n in names):
                if candidate.is_file() and candidate not in found and candidate != path:
                    found.append(candidate)
                    queue.append(candidate)
    return sorted(found)


def _load_class(spec: str, module_name: str, class_name: str) -> type[Governor]:
    module = _load_module(spec, module_name)
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, Governor)):
        raise ConfigError(
            f"governor {spec!r}: {module_name} has no dvfslab.Governor subclass {class_name!r}"
        )
    return cls


def _load_module(spec: str, module_name: str) -> ModuleType:
    """The module a spec names: a file path ending in .py, or an importable name (the current
    directory included)."""
    try:
        if module_name.endswith(".py"):
            path = Path(module_name)
            loader_spec = importlib.util.spec_from_file_location(path.stem, path)
            if loader_spec is None or loader_spec.loader is None or not path.is_file():
                raise ConfigError(f"governor {spec!r}: no Python file {path}")
            module = importlib.util.module_from_spec(loader_spec)
            loader_spec.loader.exec_module(module)
        else:
            if "" not in sys.path:
                sys.path.insert(0, "")
            module = importlib.import_module(module_name)
    except ImportError as e:
        raise ConfigError(f"governor {spec!r}: cannot import {module_name}: {e}") from None
    except SyntaxError as e:
        where = f"{e.filename or module_name}, line {e.lineno}" if e.lineno else module_name
        raise ConfigError(f"governor {spec!r}: {where}: {e.msg}") from None
    except SystemExit as e:
        raise ConfigError(
            f"governor {spec!r}: importing {module_name} called sys.exit({e.code!r}); a "
            "governor module should only define its classes at import"
        ) from None
    except ConfigError:
        raise
    except Exception as e:
        raise ConfigError(
            f"governor {spec!r}: importing {module_name} raised {_exception(e)}"
        ) from None
    return module


def _value(spec: str, key: str, text: str, default: Any) -> Any:
    """`text` as the type of the class attribute it sets."""
    kind = type(default)
    try:
        if kind is bool:
            if text not in ("0", "1", "true", "false"):
                raise ValueError(text)
            return text in ("1", "true")
        if kind is tuple:  # enables=eas+fast_switch: a spec's commas separate its keys
            return tuple(filter(None, (t.strip() for t in text.split("+"))))
        return kind(text) if kind in (int, float, str) else float(text)
    except ValueError:
        raise ConfigError(
            f"governor {spec!r}: {key}: expected {kind.__name__}, got {text!r}"
        ) from None
