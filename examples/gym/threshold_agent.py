"""Train a small governor on dvfslab's Gymnasium environment and set it beside schedutil and
ondemand, energy and performance side by side (docs/research.md).

The agent is a two-threshold policy per run: each policy goes one table entry up when its
busiest CPU was idle less than `low` of the interval, one down when more than `high`. Training
is random search over (low, high) on a few seeds, keeping the best mean reward: a few lines,
no reinforcement-learning library. Run it with `python examples/gym/threshold_agent.py`.
"""

from __future__ import annotations

import json

import numpy as np

import dvfslab
from dvfslab.gym import DvfsEnv

PLATFORM, WORKLOAD, SECONDS = "pixel6", "periodic:threads=4,run_us=3000,period_us=10000", 2.0


def act(
    obs: dict[str, np.ndarray], cpus: list[list[int]], sizes: list[int], low: float, high: float
) -> list[int]:
    """One table step per policy from its busiest CPU's idle share."""
    action = []
    for p, members in enumerate(cpus):
        idle = min(float(obs["idle"][c]) for c in members)
        step = 1 if idle < low else -1 if idle > high else 0
        action.append(int(np.clip(obs["opp"][p] + step, 0, sizes[p] - 1)))
    return action


def episode(env: DvfsEnv, low: float, high: float, seed: int) -> tuple[float, dict]:
    obs, _ = env.reset(seed=seed)
    cpus, sizes = env.policy_cpus, [len(t) for t in env.tables_khz]
    total, done, info = 0.0, False, {}
    while not done:
        obs, reward, terminated, truncated, info = env.step(act(obs, cpus, sizes, low, high))
        total += reward
        done = terminated or truncated
    return total, json.loads(info["result_json"])


def main() -> None:
    env = DvfsEnv(PLATFORM, WORKLOAD, decision_ms=10, duration_s=SECONDS, lost_weight=2.0)
    rng = np.random.default_rng(0)
    best = (-np.inf, 0.2, 0.6)
    for _ in range(24):
        low, high = sorted(rng.uniform(0.0, 1.0, 2))
        score = np.mean([episode(env, low, high, seed)[0] for seed in (1, 2)])
        if score > best[0]:
            best = (score, low, high)
    _, low, high = best
    _, trained = episode(env, low, high, seed=3)
    print(f"trained thresholds: up below {low:.2f} idle, down above {high:.2f}")
    print(f"{'governor':<12} {'energy J':>9} {'mean response us':>17}")
    print(f"{'trained':<12} {trained['energy_j']:>9.3f} {trained['metric']['value']:>17.1f}")
    for governor in ("schedutil", "ondemand"):
        r = dvfslab.simulate(PLATFORM, governor, WORKLOAD, duration_s=SECONDS, seed=3)
        print(f"{governor:<12} {r.energy_j:>9.3f} {r.metric.value:>17.1f}")


if __name__ == "__main__":
    main()
