"""A Gymnasium environment of the simulator: the agent is the cpufreq governor of some or all
policies (`pip install 'dvfslab[gym]'`; docs/research.md). Importing this module registers it
as "dvfslab/Dvfs-v0" for `gymnasium.make` and `gymnasium.make_vec`.

Each step applies one frequency choice per driven policy (the index of a table entry: the
driver resolves and applies it as it would a governor's request) and advances the simulation
by one decision interval. The other policies run under a built-in governor (`governor`), as
does every policy until the agent's first decision, unless `start_opp` gives the table entries
to start at. The observation is what a governor could see over that interval, for every CPU
and policy:

- "util":    each CPU's PELT util_avg over its capacity, 0..1;
- "idle":    each CPU's idle share of the interval, 0..1;
- "opp":     each policy's current table index;
- "power_w": each policy's cores' average power over the interval (W).

The default reward is minus the energy of the interval (J), minus `lost_weight` times the CPU
time the busy CPUs would have saved at their top frequency (s), minus `latency_weight` times
the workload's response times that ended in the interval (s, summed), minus `miss_weight`
times the responses longer than the deadline (missed deadlines: every uibench frame longer
than its vsync period, where Jankbench's jank share counts a run of them once). Pass
`reward=f(obs, info)` for another; `info` holds "energy_j", "lost_s", "time_s",
"responses" (how many ended), "response_mean_s", "response_max_s", "response_sum_s" and
"misses".

EAS stays off, as in Linux, where it runs only when schedutil governs every policy.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, Callable

import numpy as np

from dvfslab import _core
from dvfslab._core import ConfigError
from dvfslab.api import duration_ns
from dvfslab.governors import eas_off
from dvfslab.platforms import PlatformRef, load_platform

try:
    import gymnasium
    from gymnasium import spaces
except ImportError as e:  # pragma: no cover - the message is the point
    raise ImportError("dvfslab.gym needs Gymnasium: pip install 'dvfslab[gym]'") from e

ENV_ID = "dvfslab/Dvfs-v0"
"""The id `gymnasium.make` takes (after `import dvfslab.gym`, or as "dvfslab.gym:" + ENV_ID)."""
POWER_BOUND_W = float(np.finfo(np.float32).max)
"""The power space's upper bound: no policy's power is bounded by the model."""

Reward = Callable[[dict[str, np.ndarray], dict[str, Any]], float]


class DvfsEnv(gymnasium.Env[dict[str, np.ndarray], np.ndarray]):
    """The simulator as a Gymnasium environment: `platform` runs `workload` for `duration_s`
    simulated seconds, the agent choosing the frequency of `policies` (default: all) every
    `decision_ms`, the others under `governor`.

    governor:    the built-in governor spec of the policies the agent does not drive, and of
                 every policy until the first decision (default "schedutil")
    start_opp:   instead, the table index each driven policy starts at
    system:      system keys for the run ("kernel=6.8,invariant=1")
    deadline_ms: a response longer than this is a miss (default: the workload's period,
                 `period_us`, or a uibench frame's vsync period; none otherwise)
    """

    metadata = {"render_modes": []}  # noqa: RUF012 (gymnasium declares it so)

    def __init__(
        self,
        platform: PlatformRef,
        workload: str,
        *,
        decision_ms: float = 10.0,
        duration_s: float = 10.0,
        system: str = "",
        governor: str = "schedutil",
        policies: Sequence[int] | None = None,
        start_opp: Sequence[int] | None = None,
        reward: Reward | None = None,
        lost_weight: float = 1.0,
        latency_weight: float = 0.0,
        miss_weight: float = 0.0,
        deadline_ms: float | None = None,
    ) -> None:
        if not (decision_ms * 1e6 >= 0.5 and math.isfinite(decision_ms)):  # 1 ns, rounded
            raise ConfigError(f"decision_ms must be a number >= 1e-06 (1 ns) (got {decision_ms})")
        self._platform = load_platform(platform)
        self._workload = workload
        self._decision_ns = round(decision_ms * 1e6)
        self._duration_ns = duration_ns(duration_s)
        if self._duration_ns is not None and self._decision_ns >= self._duration_ns:
            # The run would end before the agent's first decision.
            raise ConfigError(
                f"decision_ms ({decision_ms:g}) must be shorter than the run "
                f"(duration_s = {duration_s:g})"
            )
        self._governor = eas_off(governor, system, "the environment")
        self._reward = reward
        self._weights = (lost_weight, latency_weight, miss_weight)
        self._deadline_s = deadline_ms / 1e3 if deadline_ms is not None else _deadline_s(workload)
        self._start_opp = None if start_opp is None else [int(i) for i in start_opp]
        self._controlled: list[int] | None = (
            None if policies is None else [int(p) for p in policies]
        )
        if self._controlled is not None and (
            not self._controlled or len(set(self._controlled)) != len(self._controlled)
        ):
            raise ConfigError(f"policies: expected distinct policy indexes (got {policies})")
        probe = self._new_sim(0)
        self._tables = probe.tables_khz
        self._policy_cpus = probe.policy_cpus
        if self._controlled is None:
            self._controlled = list(range(len(self._tables)))
        ncpus = sum(len(c) for c in self._policy_cpus)
        self.action_space = spaces.MultiDiscrete([len(self._tables[p]) for p in self._controlled])
        self.observation_space = spaces.Dict(  # type: ignore[assignment]
            {
                "util": spaces.Box(0.0, 1.0, (ncpus,), np.float32),
                "idle": spaces.Box(0.0, 1.0, (ncpus,), np.float32),
                "opp": spaces.MultiDiscrete([len(t) for t in self._tables]),
                "power_w": spaces.Box(0.0, POWER_BOUND_W, (len(self._tables),), np.float32),
            }
        )
        self._sim: Any = None
        self._last: dict[str, Any] = {}

    @property
    def policy_cpus(self) -> list[list[int]]:
        """Each policy's CPUs, as the observation's per-CPU arrays number them."""
        return [list(c) for c in self._policy_cpus]

    @property
    def tables_khz(self) -> list[list[int]]:
        """Each policy's frequency table (kHz, ascending): an action is an index in it."""
        return [list(t) for t in self._tables]

    @property
    def policies(self) -> list[int]:
        """The policies the agent drives: the action's i-th index is policy policies[i]'s."""
        assert self._controlled is not None
        return list(self._controlled)

    def _opp_indices(self, action: Any) -> list[int]:
        """`action` as one OPP index per policy the agent drives; a ConfigError for anything
        else."""
        controlled = self.policies
        values = np.asarray(action).reshape(-1)
        if len(values) != len(controlled) or values.dtype.kind not in "iu":
            raise ConfigError(
                f"action: expected one OPP index per policy ({len(controlled)}), integers "
                f"(got {action!r})"
            )
        for p, i in zip(controlled, values.tolist()):
            table = self._tables[p]
            if not 0 <= i < len(table):
                raise ConfigError(
                    f"action: policy {p}: OPP index {i} is not in 0..{len(table) - 1}"
                )
        return [int(i) for i in values.tolist()]

    def _new_sim(self, seed: int) -> Any:
        return _core.SteppedSim(
            *self._platform,
            self._governor,
            self._workload,
            self._decision_ns,
            duration_ns=self._duration_ns,
            seed=seed,
            controlled=self._controlled,
            start_opp=self._start_opp,
        )

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        run_seed = int(self.np_random.integers(0, 2**63 - 1)) if seed is None else seed
        self._sim = self._new_sim(run_seed)
        self._last = self._sim.observe()
        # The first decision comes one interval after the start, from nothing spent.
        start = {"time_s": 0.0, "energy_j": 0.0, "policy_energy_j": [0.0] * len(self._tables)}
        return self._observation(start, self._last)

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        if self._sim is None:
            raise RuntimeError("call reset() before step()")
        ended = self._sim.step(self._opp_indices(action))
        now = self._sim.observe()
        obs, info = self._observation(self._last, now)
        self._last = now
        if ended:
            info["result_json"] = self._sim.result_json
        if self._reward is not None:
            reward = self._reward(obs, info)
        else:
            lost_w, latency_w, miss_w = self._weights
            reward = -(
                info["energy_j"]
                + lost_w * info["lost_s"]
                + latency_w * info["response_sum_s"]
                + miss_w * info["misses"]
            )
        # The time limit truncates an episode; a workload whose tasks all exit ends it.
        truncated = bool(ended and now["truncated"])
        return obs, float(reward), bool(ended) and not truncated, truncated, info

    def _observation(
        self, before: dict[str, Any], now: dict[str, Any]
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        span = now["time_s"] - before["time_s"]
        power = [
            max(n - b, 0.0) / span if span > 0 else 0.0
            for n, b in zip(now["policy_energy_j"], before["policy_energy_j"])
        ]
        # CPU time lost to running below the top frequency: busy time x (1 - f / f_max).
        lost = 0.0
        for p, cpus in enumerate(self._policy_cpus):
            share = 1.0 - now["cur_khz"][p] / self._tables[p][-1]
            lost += share * sum(now["busy_s"][c] for c in cpus)
        obs: dict[str, np.ndarray] = {
            "util": np.asarray(now["util"], dtype=np.float32),
            "idle": np.asarray(now["idle"], dtype=np.float32),
            "opp": np.asarray(now["opp"], dtype=np.int64),
            "power_w": np.asarray(power, dtype=np.float32),
        }
        responses = now.get("responses_s", [])
        total = float(sum(responses))
        deadline = self._deadline_s
        info = {
            "energy_j": now["energy_j"] - before["energy_j"],
            "lost_s": lost,
            "time_s": now["time_s"],
            "responses": len(responses),
            "response_sum_s": total,
            "response_mean_s": total / len(responses) if responses else 0.0,
            "response_max_s": max(responses, default=0.0),
            "misses": sum(r > deadline for r in responses) if deadline is not None else 0,
        }
        return obs, info


def _deadline_s(workload: str) -> float | None:
    """The workload's own deadline: a uibench frame's vsync period, or a periodic task's
    period (`period_us`); None for the others."""
    name, _, settings = workload.partition(":")
    given = dict(s.split("=", 1) for s in settings.split(",") if "=" in s)
    for w in json.loads(_core.workloads()):
        if w["name"] != name:
            continue
        knobs = {k["name"]: float(given.get(k["name"], k["default"])) for k in w["knobs"]}
        if name == "uibench":
            return 1.0 / knobs["fps"]
        if "period_us" in knobs:
            return knobs["period_us"] / 1e6
    return None


def _register() -> None:
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(
            ENV_ID,
            entry_point="dvfslab.gym:DvfsEnv",
            kwargs={"platform": "pixel6", "workload": "periodic:threads=4"},
        )


_register()
