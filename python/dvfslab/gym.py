"""A Gymnasium environment of the simulator: the agent is the cpufreq governor of every policy
(`pip install 'dvfslab[gym]'`; docs/research.md).

Each step applies one frequency choice per policy (the index of a table entry: the driver
resolves and applies it as it would a governor's request) and advances the simulation by one
decision interval. The observation is what a governor could see over that interval:

- "util":    each CPU's PELT util_avg over its capacity, 0..1;
- "idle":    each CPU's idle share of the interval, 0..1;
- "opp":     each policy's current table index;
- "power_w": each policy's cores' average power over the interval (W).

The default reward is minus the energy of the interval (J) minus `lost_weight` times the CPU
time the busy CPUs would have saved at their top frequency (s): energy against lost throughput.
Pass `reward=f(obs, info)` for another; `info` holds "energy_j", "lost_s" and "time_s".
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from dvfslab import _core
from dvfslab._core import ConfigError
from dvfslab.api import duration_ns
from dvfslab.governors import BASE_GOVERNOR
from dvfslab.platforms import PlatformRef, load_platform

try:
    import gymnasium
    from gymnasium import spaces
except ImportError as e:  # pragma: no cover - the message is the point
    raise ImportError("dvfslab.gym needs Gymnasium: pip install 'dvfslab[gym]'") from e

POWER_BOUND_W = float(np.finfo(np.float32).max)
"""The power space's upper bound: no policy's power is bounded by the model."""

Reward = Callable[[dict[str, np.ndarray], dict[str, float]], float]


class DvfsEnv(gymnasium.Env[dict[str, np.ndarray], np.ndarray]):
    """The simulator as a Gymnasium environment: `platform` runs `workload` for `duration_s`
    simulated seconds, the agent choosing every policy's frequency every `decision_ms`."""

    metadata = {"render_modes": []}  # noqa: RUF012 (gymnasium declares it so)

    def __init__(
        self,
        platform: PlatformRef,
        workload: str,
        *,
        decision_ms: float = 10.0,
        duration_s: float = 10.0,
        system: str = "",
        reward: Reward | None = None,
        lost_weight: float = 1.0,
    ) -> None:
        if not (decision_ms * 1e6 >= 0.5 and math.isfinite(decision_ms)):  # 1 ns, rounded
            raise ConfigError(f"decision_ms must be a number >= 1e-06 (1 ns) (got {decision_ms})")
        self._platform = load_platform(platform)
        self._workload = workload
        self._decision_ns = round(decision_ms * 1e6)
        self._duration_ns = duration_ns(duration_s)
        self._governor = BASE_GOVERNOR + (f":{system}" if system else "")
        self._reward = reward
        self._lost_weight = lost_weight
        probe = self._new_sim(0)
        self._tables = probe.tables_khz
        self._policy_cpus = probe.policy_cpus
        ncpus = sum(len(c) for c in self._policy_cpus)
        self.action_space = spaces.MultiDiscrete([len(t) for t in self._tables])
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

    def _opp_indices(self, action: Any) -> list[int]:
        """`action` as one OPP index per policy; a ConfigError for anything else."""
        values = np.asarray(action).reshape(-1)
        if len(values) != len(self._tables) or values.dtype.kind not in "iu":
            raise ConfigError(
                f"action: expected one OPP index per policy ({len(self._tables)}), integers "
                f"(got {action!r})"
            )
        for p, (i, table) in enumerate(zip(values.tolist(), self._tables)):
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
        reward = (
            self._reward(obs, info)
            if self._reward is not None
            else -(info["energy_j"] + self._lost_weight * info["lost_s"])
        )
        return obs, float(reward), bool(ended), False, info

    def _observation(
        self, before: dict[str, Any], now: dict[str, Any]
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        span = now["time_s"] - before["time_s"]
        power = [(n - b) / span for n, b in zip(now["policy_energy_j"], before["policy_energy_j"])]
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
        info = {
            "energy_j": now["energy_j"] - before["energy_j"],
            "lost_s": lost,
            "time_s": now["time_s"],
        }
        return obs, info
