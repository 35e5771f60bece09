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
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any, Literal

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


@dataclass(frozen=True)
class Param:
    """A tunable searched over [low, high], on a log scale if `log`, whole numbers if `integer`."""

    name: str
    low: float
    high: float
    log: bool
    integer: bool


def parse_param(text: str, integer_knobs: set[str]) -> Param:
    """NAME=LOW..HIGH[:log]."""
    name, eq, rest = text.partition("=")
    span, _, scale = rest.partition(":")
    low_text, dots, high_text = span.partition("..")
    bad = ConfigError(
        f"--param {text!r}: expected NAME=LOW..HIGH[:log], e.g. rate_limit_us=100..20000:log"
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


def integer_tunables(governor: str) -> set[str]:
    """The governor's whole-number tunables: the registry's, or a Python class's int attributes."""
    from dvfslab.governors import PYTHON_PREFIX, resolve

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


def check_params(governor: str, params: list[Param]) -> None:
    """A ConfigError, before any trial runs, for a --param that is not a tunable of the
    governor (its own, a system key such as hz=, or either for one policy: policy1.KEY)."""
    from dvfslab.governors import PYTHON_PREFIX, resolve

    system = {k["name"] for k in json.loads(_core.system_tunables())}
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


def trial_spec(governor: str, values: dict[str, float], params: list[Param]) -> str:
    """The governor spec with the trial's tunables set."""
    settings = []
    for p in params:
        v = values[p.name]
        settings.append(f"{p.name}={round(v) if p.integer else float(f'{v:.6g}')}")
    return with_settings(governor, ",".join(settings))


def tune(
    platform: str,
    governor: str,
    params: list[Param],
    workloads: list[str],
    *,
    objectives: list[str],
    trials: int,
    out: str | os.PathLike[str],
    iterations: int = 3,
    duration_s: float | None = None,
    seed: int = 0,
    nominal: bool = False,
    jobs: int | None = None,
    ray_address: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Run (or resume) a search of `trials` trials; return the default, every trial and the
    Pareto front, as `dvfslab tune --json` prints them."""
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
    check_params(governor, params)
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        study_name="dvfslab-tune",
        storage=f"sqlite:///{root / STUDY_FILE}",
        load_if_exists=True,
        directions=[OBJECTIVES[o] for o in objectives],
        sampler=optuna.samplers.TPESampler(seed=seed),
    )
    _check_same_search(study, platform, governor, params, workloads, objectives)
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
    )
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    for _ in range(trials - len(done)):
        trial = study.ask()
        values = {
            p.name: (
                trial.suggest_int(p.name, math.ceil(p.low), math.floor(p.high), log=p.log)
                if p.integer
                else trial.suggest_float(p.name, p.low, p.high, log=p.log)
            )
            for p in params
        }
        spec = trial_spec(governor, values, params)
        scores = evaluate(spec, progress)
        trial.set_user_attr("spec", spec)
        study.tell(trial, [scores[o] for o in objectives])
    return _summary(study, objectives)


class _Evaluator:
    """Runs a trial's spec and the default on every workload, in one results store."""

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
        self.jobs, self.ray_address = jobs, ray_address

    def __call__(self, spec: str, progress: bool) -> dict[str, float]:
        from dvfslab.campaign import campaign_from_dict, run_campaign
        from dvfslab.campaign.store import load_results

        doc = {**self.doc, "configs": {DEFAULT_CONFIG: self.governor, "trial": spec}}
        campaign = campaign_from_dict(doc, source="dvfslab tune")
        run_campaign(
            campaign, self.store, jobs=self.jobs, ray_address=self.ray_address, progress=progress
        )
        return scores(load_results(self.store))


def scores(results: Any) -> dict[str, float]:
    """Each objective of the "trial" config against the default (module docstring)."""
    per_iteration: dict[int, dict[str, list[float]]] = {}
    key = ["benchmark", "param", "iteration"]
    default = results[results["config"] == DEFAULT_CONFIG].set_index(key)
    trial = results[results["config"] == "trial"].set_index(key)
    for index, row in trial.iterrows():
        base = default.loc[index]
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
        raise ConfigError("tune: no finished runs to score (see the runs' errors in the store)")
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
    params: list[Param],
    workloads: list[str],
    objectives: list[str],
) -> None:
    """A resumed search must be the same search: the study remembers what it was."""
    search = {
        "platform": platform,
        "governor": governor,
        "params": [p.__dict__ for p in params],
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
    front = {t.number for t in study.best_trials}

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


def _shown(value: float | int | None) -> str:
    if value is None:
        return "-"
    return str(value) if isinstance(value, int) else f"{value:.4g}"


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
