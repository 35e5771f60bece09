"""`dvfslab tune`: search a governor's tunables for the best trade-offs, with Optuna
(multi-objective), every run kept in a results store so that a killed search resumes
(docs/research.md).

Each trial is a governor spec with the searched tunables set; it runs every workload, with
the campaign's iterations (model variants unless `nominal`), beside the governor with its
default tunables. A trial's objectives are ratios to the default, so the default sits at 1.0:

- perf:   the benchmark metric, oriented so that above 1 is better;
- energy: energy used, below 1 is better;
- power:  average package power, below 1 is better;
- ppw:    perf per watt (perf / power), above 1 is better.

Per iteration the ratios are paired (same variant, same seed) and combined over the workloads
by geometric mean; a trial's objective is its least favourable iteration, so that a point is
better than the default only if it is better under every variant drawn.

A trial whose runs fail, or whose metric, energy or power is zero or not finite (no ratio can
be taken), is a failed trial (Optuna's FAIL state, its reason kept): the search goes on. A
trial left RUNNING by a killed search is marked failed when the search resumes.

Each trial's proposal comes from a sampler seeded with (seed, trial number), so that a resumed
search proposes what the uninterrupted one would have, never its first values again.

No pruning: a run's benchmark metric is known only when the run ends (the simulator reports no
intermediate metric), Optuna's pruners (`Trial.report`) take single-objective studies only, and
a trial's iterations run side by side, the least favourable deciding (docs/research.md).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any, Literal, Union

from dvfslab import _core
from dvfslab._core import ConfigError
from dvfslab._files import replace_atomically
from dvfslab.governors import with_settings
from dvfslab.report import Table

Direction = Literal["maximize", "minimize"]
OBJECTIVES: dict[str, Direction] = {
    "perf": "maximize",
    "energy": "minimize",
    "power": "minimize",
    "ppw": "maximize",
}
"""Each objective with its direction."""
DEFAULT_CONFIG = "default"
STUDY_FILE = "study.db"
SAMPLERS = ("tpe", "nsga2", "random", "grid")
"""The samplers `--sampler` takes: Optuna's TPE, NSGA-II, random and grid samplers."""
GRID_POINTS = 5
"""Points a range is cut into for the grid sampler (log-evenly on a log scale)."""
KILLED = "stopped before it finished (the search was killed or interrupted)"


class TrialFailed(Exception):
    """A trial that gives no objective: a run failed, or a ratio cannot be taken."""


@dataclass(frozen=True)
class Param:
    """A tunable searched over [low, high], on a log scale if `log`, whole numbers if `integer`."""

    name: str
    low: float
    high: float
    log: bool
    integer: bool

    def suggest(self, trial: Any) -> float | int:
        if self.integer:
            return int(
                trial.suggest_int(
                    self.name, math.ceil(self.low), math.floor(self.high), log=self.log
                )
            )
        return float(trial.suggest_float(self.name, self.low, self.high, log=self.log))

    def grid(self, points: int) -> list[float | int]:
        """`points` values over [low, high], evenly (log-evenly on a log scale), ends included."""
        if points < 2:
            raise ConfigError(f"--grid-points must be >= 2 (got {points})")
        if self.log:
            a, b = math.log(self.low), math.log(self.high)
            values = [math.exp(a + (b - a) * i / (points - 1)) for i in range(points)]
        else:
            values = [self.low + (self.high - self.low) * i / (points - 1) for i in range(points)]
        if self.integer:
            lo, hi = math.ceil(self.low), math.floor(self.high)
            return sorted({min(max(round(v), lo), hi) for v in values})
        return [float(f"{v:.6g}") for v in values]

    def describe(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Categorical:
    """A tunable searched over a list of values (text, as a spec writes them)."""

    name: str
    choices: tuple[str, ...]

    def suggest(self, trial: Any) -> str:
        return str(trial.suggest_categorical(self.name, list(self.choices)))

    def grid(self, points: int) -> list[str]:
        return list(self.choices)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "choices": list(self.choices)}


SearchParam = Union[Param, Categorical]


def parse_param(text: str, integer_knobs: set[str]) -> SearchParam:
    """NAME=LOW..HIGH[:log] (a range) or NAME=A,B[,C...] (a list of values)."""
    name, eq, rest = text.partition("=")
    if eq and name and "," in rest and ".." not in rest:
        choices = tuple(c.strip() for c in rest.split(","))
        if "" in choices or len(set(choices)) != len(choices):
            raise ConfigError(f"--param {text!r}: expected NAME=A,B,..., each value once")
        return Categorical(name, choices)
    span, _, scale = rest.partition(":")
    low_text, dots, high_text = span.partition("..")
    bad = ConfigError(
        f"--param {text!r}: expected NAME=LOW..HIGH[:log], e.g. rate_limit_us=100..20000:log, "
        "or NAME=A,B,..., e.g. fits=80pct,tick"
    )
    if not name or not eq or not dots or scale not in ("", "log"):
        raise bad
    try:
        low, high = float(low_text), float(high_text)
    except ValueError:
        raise bad from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ConfigError(f"--param {text!r}: expected LOW < HIGH, finite")
    if scale == "log" and low <= 0:
        raise ConfigError(f"--param {text!r}: a log scale needs LOW > 0")
    return Param(name, low, high, scale == "log", name in integer_knobs)


class _FileTunables(set[str]):
    """A kernel governor file's whole-number tunables: every name but the system keys that
    take text or a fraction. The file's sysfs attributes are known only once it is built,
    and the cpufreq governors' `store`s all parse a whole number (kstrtouint, sscanf "%u")."""

    def __init__(self, not_integer: set[str]) -> None:
        super().__init__()
        self.not_integer = not_integer

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and re.sub(r"^policy\d+\.", "", name) not in self.not_integer


def integer_tunables(governor: str) -> set[str]:
    """The governor's whole-number tunables: the registry's, a Python class's int attributes,
    or a kernel governor file's sysfs tunables (all of them, see `_FileTunables`)."""
    from dvfslab.governors import KERNEL_PREFIX, PYTHON_PREFIX, resolve

    if governor.startswith(KERNEL_PREFIX):
        system = json.loads(_core.system_tunables())
        return _FileTunables({k["name"] for k in system if not k.get("integer")})
    if governor.startswith(PYTHON_PREFIX):
        _, made = resolve(governor)
        assert made is not None
        cls = type(made[1])
        return {k for k in dir(cls) if isinstance(getattr(cls, k), int) and not k.startswith("_")}
    name = governor.split(":", 1)[0]
    for g in json.loads(_core.governors()):
        if g["name"] == name:
            return {
                k["name"]
                for k in [*g["tunables"], *json.loads(_core.system_tunables())]
                if k.get("integer")  # the text keys (kernel=, driver=) have no flag
            }
    raise ConfigError(f"unknown governor {name!r}")


def check_params(governor: str, params: list[SearchParam], platform: str | None = None) -> None:
    """A ConfigError, before any trial runs, for a --param that is not a tunable of the
    governor (its own, a system key such as hz=, or either for one policy: policy1.KEY).

    A kernel governor file's tunables are its sysfs attributes: the file is built and each
    --param written through its `store` at the bottom of its range (or its first value) on
    `platform`, as a trial would; the file's refusal names the attribute and the known ones."""
    from dvfslab.governors import KERNEL_PREFIX, PYTHON_PREFIX, resolve

    system = {k["name"] for k in json.loads(_core.system_tunables())}
    if governor.startswith(KERNEL_PREFIX):
        from dvfslab.platforms import load_platform

        first = {p.name: p.grid(2)[0] for p in params}
        spec = trial_spec(governor, first, params)
        preset_json, source = load_platform(platform or "skylake-e3-1240v5")
        try:
            _core.check(preset_json, source, spec, "periodic", duration_ns=1_000_000)
        except ConfigError as e:
            raise ConfigError(f"--param: {e}") from None
        return
    if governor.startswith(PYTHON_PREFIX):
        _, made = resolve(governor)
        assert made is not None
        cls = type(made[1])
        own = {k for k in dir(cls) if not k.startswith("_") and not callable(getattr(cls, k, None))}
        name = cls.__name__
    else:
        name = governor.split(":", 1)[0]
        found = [g for g in json.loads(_core.governors()) if g["name"] == name]
        if not found:
            raise ConfigError(f"unknown governor {name!r}")
        own = {k["name"] for k in found[0]["tunables"]}
    known = own | system
    for p in params:
        key = re.sub(r"^policy\d+\.", "", p.name)
        if key not in (own if key != p.name else known):
            raise ConfigError(
                f"--param {p.name}: not a tunable of {name} (its tunables: "
                f"{', '.join(sorted(own))}; system keys: {', '.join(sorted(system))})"
            )


def trial_spec(governor: str, values: dict[str, Any], params: list[SearchParam]) -> str:
    """The governor spec with the trial's tunables set."""
    settings = []
    for p in params:
        v = values[p.name]
        if isinstance(p, Categorical):
            settings.append(f"{p.name}={v}")
        else:
            settings.append(f"{p.name}={round(v) if p.integer else float(f'{v:.6g}')}")
    return with_settings(governor, ",".join(settings))


def make_sampler(name: str, seed: int, params: list[SearchParam], grid_points: int) -> Any:
    """Optuna's sampler `name` (one of SAMPLERS) seeded with `seed`."""
    import optuna

    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if name == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "grid":

        class Grid(optuna.samplers.GridSampler):
            # The search stops at its trial count, bounded by the grid's size; Optuna's own
            # stop (Study.stop) works only inside Study.optimize.
            def after_trial(self, *args: Any, **kwargs: Any) -> None:
                pass

        return Grid({p.name: p.grid(grid_points) for p in params}, seed=seed)
    raise ConfigError(f"--sampler: unknown {name!r} (known: {', '.join(SAMPLERS)})")


def grid_size(params: list[SearchParam], grid_points: int) -> int:
    return math.prod(len(p.grid(grid_points)) for p in params)


def trial_seed(seed: int, number: int) -> int:
    """The sampler's seed for trial `number`: a resumed search draws what an uninterrupted one
    would."""
    import numpy as np

    return int(np.random.SeedSequence([seed, number]).generate_state(1)[0])


def tune(
    platform: str,
    governor: str,
    params: list[SearchParam],
    workloads: list[str],
    *,
    objectives: list[str],
    trials: int,
    out: str | os.PathLike[str],
    iterations: int = 3,
    duration_s: float | None = None,
    seed: int = 0,
    nominal: bool = False,
    sampler: str = "tpe",
    grid_points: int = GRID_POINTS,
    jobs: int | None = None,
    ray_address: str | None = None,
    batch: int | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Run (or resume) a search of `trials` trials; return the default, every trial and the
    Pareto front, as `dvfslab tune --json` prints them.

    `trials` counts the trials that finished, failed ones included (a trial stopped by a kill
    is run again). `batch` trials are asked at a time and their runs spread together over
    `jobs` local processes or the Ray cluster at `ray_address` (default: `jobs` trials, or
    one); the grid sampler stops when its grid is done."""
    try:
        import optuna
    except ImportError:
        raise ConfigError("dvfslab tune needs Optuna: pip install 'dvfslab[tune]'") from None

    for o in objectives:
        if o not in OBJECTIVES:
            raise ConfigError(f"--objectives: unknown {o!r} (known: {', '.join(OBJECTIVES)})")
    if len(set(objectives)) != len(objectives) or not objectives:
        raise ConfigError("--objectives: name each objective once")
    if trials < 1:
        raise ConfigError(f"--trials must be >= 1 (got {trials})")
    names = [p.name for p in params]
    if not params or len(set(names)) != len(names):
        raise ConfigError("tune needs at least one --param, each tunable once")
    batch = batch if batch is not None else (jobs or 1)
    if batch < 1:
        raise ConfigError(f"--batch must be >= 1 (got {batch})")
    make_sampler(sampler, seed, params, grid_points)  # refuses a bad name or grid first
    if sampler == "grid":
        trials = min(trials, grid_size(params, grid_points))
    check_params(governor, params, platform)
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        study_name="dvfslab-tune",
        storage=f"sqlite:///{root / STUDY_FILE}",
        load_if_exists=True,
        directions=[OBJECTIVES[o] for o in objectives],
    )
    _check_same_search(study, platform, governor, params, workloads, objectives)
    _fail_killed(study)
    evaluate = _Evaluator(
        platform,
        governor,
        workloads,
        root,
        iterations,
        duration_s,
        seed,
        nominal,
        jobs,
        ray_address,
        progress,
    )
    evaluate.default()
    while (todo := trials - _finished(study)) > 0:
        asked = []
        for _ in range(min(batch, todo)):
            number = len(study.get_trials(deepcopy=False))
            # The grid sampler shuffles its grid with its seed: one seed for the whole search.
            drawn = seed if sampler == "grid" else trial_seed(seed, number)
            study.sampler = make_sampler(sampler, drawn, params, grid_points)
            trial = study.ask()
            values = {p.name: p.suggest(trial) for p in params}
            spec = trial_spec(governor, values, params)
            trial.set_user_attr("spec", spec)
            asked.append((trial, spec))
        try:
            got = evaluate({f"t{t.number}": spec for t, spec in asked})
        except BaseException:
            for t, _ in asked:
                study.tell(t, state=optuna.trial.TrialState.FAIL)
            raise
        for t, _ in asked:
            outcome = got[f"t{t.number}"]
            if isinstance(outcome, str):
                t.set_user_attr("error", outcome)
                study.tell(t, state=optuna.trial.TrialState.FAIL)
            else:
                study.tell(t, [outcome[o] for o in objectives])
    return _summary(study, objectives)


def _finished(study: Any) -> int:
    """Trials that count toward --trials: completed, or failed for a reason of their own."""
    import optuna

    states = optuna.trial.TrialState
    return sum(
        t.state == states.COMPLETE or (t.state == states.FAIL and "error" in t.user_attrs)
        for t in study.get_trials(deepcopy=False)
    )


def _fail_killed(study: Any) -> None:
    """A trial still RUNNING when a search starts was left so by a killed one: failed."""
    import optuna

    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        study.tell(t.number, state=optuna.trial.TrialState.FAIL)


class _Evaluator:
    """Runs trials' specs beside the default on every workload, in one results store."""

    def __init__(
        self,
        platform: str,
        governor: str,
        workloads: list[str],
        root: Path,
        iterations: int,
        duration_s: float | None,
        seed: int,
        nominal: bool,
        jobs: int | None,
        ray_address: str | None,
        progress: bool,
    ) -> None:
        self.platform, self.governor, self.workloads = platform, governor, workloads
        self.store = root / "runs"
        self.doc: dict[str, Any] = {
            "name": "tune",
            "platforms": [platform],
            "benchmarks": {f"w{i}": w for i, w in enumerate(workloads)},
            "iterations": iterations,
            "seed": seed,
            "nominal": nominal,
            "baseline": DEFAULT_CONFIG,
        }
        if duration_s is not None:
            self.doc["duration_s"] = duration_s
        self.jobs, self.ray_address, self.progress = jobs, ray_address, progress

    def _run(self, specs: dict[str, str]) -> Any:
        from dvfslab.campaign import campaign_from_dict, run_campaign
        from dvfslab.campaign.store import load_results

        doc = {**self.doc, "configs": {DEFAULT_CONFIG: self.governor, **specs}}
        campaign = campaign_from_dict(doc, source="dvfslab tune")
        run_campaign(
            campaign,
            self.store,
            jobs=self.jobs,
            ray_address=self.ray_address,
            progress=self.progress,
        )
        return load_results(self.store)

    def default(self) -> None:
        """The default's runs, first: if they fail, no trial can be scored and the search
        stops with their error."""
        results = self._run({})
        for column in ("metric_value", "energy_j", "avg_package_w"):
            bad = results[~(results[column] > 0) | ~results[column].map(math.isfinite)]
            if len(bad):
                raise ConfigError(
                    f"tune: the default tunables give {column} = {bad[column].iloc[0]} on "
                    f"{bad['benchmark'].iloc[0]}: no ratio to it can be taken (choose another "
                    "workload or a longer --duration)"
                )

    def __call__(self, specs: dict[str, str]) -> dict[str, dict[str, float] | str]:
        """Each config's objectives, or why it failed."""
        from dvfslab._core import DvfsError

        try:
            results = self._run(specs)
        except DvfsError as e:
            if len(specs) == 1:
                return {name: str(e) for name in specs}
            # One of them failed: each alone (the runs stored are kept) tells which.
            return {k: v for name, spec in specs.items() for k, v in self({name: spec}).items()}
        got: dict[str, dict[str, float] | str] = {}
        for name in specs:
            try:
                got[name] = scores(results, name)
            except TrialFailed as e:
                got[name] = str(e)
        return got


def scores(results: Any, config: str = "trial") -> dict[str, float]:
    """Each objective of `config` against the default (module docstring); TrialFailed when a
    ratio cannot be taken."""
    per_iteration: dict[int, dict[str, list[float]]] = {}
    key = ["benchmark", "param", "iteration"]
    default = results[results["config"] == DEFAULT_CONFIG].set_index(key)
    trial = results[results["config"] == config].set_index(key)
    for index, row in trial.iterrows():
        base = default.loc[index]
        for column in ("metric_value", "energy_j", "avg_package_w"):
            for what, value in (("trial", row[column]), ("default", base[column])):
                if not (value > 0 and math.isfinite(value)):
                    raise TrialFailed(
                        f"{column} = {value} for the {what} on {index[0]} (iteration "
                        f"{index[2]}): no ratio"
                    )
        perf = row["metric_value"] / base["metric_value"]
        if row["better"] == "lower":
            perf = 1 / perf
        energy = row["energy_j"] / base["energy_j"]
        power = row["avg_package_w"] / base["avg_package_w"]
        got = per_iteration.setdefault(int(index[2]), {o: [] for o in OBJECTIVES})
        got["perf"].append(perf)
        got["energy"].append(energy)
        got["power"].append(power)
        got["ppw"].append(perf / power)
    if not per_iteration:
        raise TrialFailed("no finished runs to score")
    gmean = {
        it: {o: math.exp(sum(map(math.log, v)) / len(v)) for o, v in got.items()}
        for it, got in per_iteration.items()
    }
    # The least favourable iteration: the lowest of a maximised ratio, the highest of a
    # minimised one.
    return {
        o: (min if OBJECTIVES[o] == "maximize" else max)(g[o] for g in gmean.values())
        for o in OBJECTIVES
    }


def _check_same_search(
    study: Any,
    platform: str,
    governor: str,
    params: list[SearchParam],
    workloads: list[str],
    objectives: list[str],
) -> None:
    """A resumed search must be the same search: the study remembers what it was."""
    search = {
        "platform": platform,
        "governor": governor,
        "params": [p.describe() for p in params],
        "workloads": workloads,
        "objectives": objectives,
    }
    before = study.user_attrs.get("search")
    if before is None:
        study.set_user_attr("search", search)
    elif before != search:
        raise ConfigError(
            "the out directory holds another search (its platform, governor, params, workloads "
            "or objectives differ): choose another --out"
        )


def _summary(study: Any, objectives: list[str]) -> dict[str, Any]:
    import optuna

    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    failed = [t for t in study.trials if t.state == optuna.trial.TrialState.FAIL]
    front = {t.number for t in study.best_trials} if done else set()

    def row(t: Any) -> dict[str, Any]:
        return {
            "trial": t.number,
            "spec": t.user_attrs["spec"],
            "params": t.params,
            **dict(zip(objectives, t.values)),
            "pareto": t.number in front,
        }

    return {
        "objectives": {o: OBJECTIVES[o] for o in objectives},
        "default": {o: 1.0 for o in objectives},
        "trials": [row(t) for t in done],
        "pareto": [row(t) for t in done if t.number in front],
        "failed": [
            {
                "trial": t.number,
                "spec": t.user_attrs.get("spec"),
                "params": t.params,
                "error": t.user_attrs.get("error", KILLED),
            }
            for t in failed
        ],
    }


def pareto_svg(summary: dict[str, Any]) -> str:
    """The trials in the plane of the first two objectives: the front, the others, the default."""
    from dvfslab.report.svg import scatter_chart

    x, y = list(summary["objectives"])[:2]
    dots = {
        "Pareto front": [(t[x], t[y], f"trial {t['trial']}") for t in summary["pareto"]],
        "other trials": [
            (t[x], t[y], f"trial {t['trial']}") for t in summary["trials"] if not t["pareto"]
        ],
        "default tunables": [(1.0, 1.0, "default")],
    }
    return scatter_chart(
        "Trials against the default tunables",
        dots,
        x_label=f"{x} (ratio to default)",
        y_label=f"{y} (ratio to default)",
    )


def front_table(summary: dict[str, Any]) -> Table:
    """The Pareto front beside the default tunables, as a table."""
    objectives = list(summary["objectives"])
    params = sorted({k for t in summary["pareto"] for k in t["params"]})
    rows = [["default", *["-" for _ in params], *["1.000" for _ in objectives]]]
    for t in sorted(summary["pareto"], key=lambda t: t[objectives[0]]):
        shown = [_shown(t["params"].get(k)) for k in params]
        rows.append([f"trial {t['trial']}", *shown, *[f"{t[o]:.3f}" for o in objectives]])
    arrows = {"maximize": "higher is better", "minimize": "lower is better"}
    title = (
        "Pareto front, ratios to the default tunables ("
        + "; ".join(f"{o}: {arrows[d]}" for o, d in summary["objectives"].items())
        + ")"
    )
    return Table(title, ["", *params, *objectives], rows, frozenset([*params, *objectives]))


def _shown(value: float | int | str | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def write_html(path: str | os.PathLike[str], summary: dict[str, Any], title: str) -> Path:
    """A search as one HTML file, written atomically: its Pareto front and the plot of its
    trials."""
    from dvfslab.report.html import html_table, page

    text = page(
        title,
        [
            f"<h1>{escape(title)}</h1>",
            '<p class="note">Each trial ran every workload beside the governor with its default '
            "tunables; its objectives are ratios to that default, on its least favourable "
            "iteration (model variant).</p>",
            pareto_svg(summary),
            html_table(front_table(summary)),
        ],
    )
    path = Path(path)
    replace_atomically(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
    return path
