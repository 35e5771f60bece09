"""Train an agent with CMA-ES (the `cma` package, `pip install 'dvfslab[rl]'`) on the
Gymnasium environment `dvfslab/Dvfs-v0` to beat the built-in governors on a stated reward
(docs/research.md).

Task: uibench on pixel6 (60 frames a second, 2 simulated seconds), the agent choosing every
policy's frequency each 10 ms, EAS off as under any governor but schedutil.
Reward of a run: R = -(energy J + 1 J x jank fraction), so a run with every frame janky pays
1 J, as much as about four seconds of the little cluster flat out.
Agent: per policy, a linear map of (busiest CPU's util, least idle share, current OPP share, 1)
through a sigmoid to an OPP share of the table: 12 weights, searched by CMA-ES on training
seeds; then scored on held-out seeds beside the built-in governors, run with
`dvfslab.simulate` on the same seeds.

    python examples/gym/cma_agent.py [--generations 40] [--json]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

import dvfslab
import dvfslab.gym  # registers dvfslab/Dvfs-v0

try:
    import cma
except ImportError as e:  # pragma: no cover - the message is the point
    raise SystemExit("this example needs the cma package: pip install 'dvfslab[rl]'") from e

import gymnasium

PLATFORM, WORKLOAD, SECONDS, DECISION_MS = "pixel6", "uibench", 2.0, 10.0
JANK_J = 1.0
"""Joules a run pays for a jank fraction of 1 (every frame late)."""
TRAIN_SEEDS, TEST_SEEDS = (1, 2), (11, 12, 13, 14, 15)
GOVERNORS = ("schedutil:eas=0", "schedutil", "ondemand", "performance", "powersave")
FEATURES = 4


def reward(result: dict[str, Any]) -> float:
    """The stated reward of a run, from its result: -(energy J + JANK_J x jank fraction)."""
    return -(result["energy_j"] + JANK_J * result["metric"]["value"] / 100.0)


def act(weights: np.ndarray, obs: dict[str, np.ndarray], env: Any) -> np.ndarray:
    """One OPP index per policy: sigmoid(w . features) as a share of the table."""
    action = []
    for p, cpus in enumerate(env.policy_cpus):
        size = len(env.tables_khz[p])
        x = np.array(
            [
                max(obs["util"][c] for c in cpus),
                min(obs["idle"][c] for c in cpus),
                obs["opp"][p] / (size - 1),
                1.0,
            ]
        )
        share = 1.0 / (1.0 + np.exp(-float(weights[p * FEATURES : (p + 1) * FEATURES] @ x)))
        action.append(round(share * (size - 1)))
    return np.array(action, dtype=np.int64)


def episode(env: Any, weights: np.ndarray, seed: int) -> dict[str, Any]:
    """The run's result (dvfslab-run JSON) with the agent driving every policy."""
    obs, _ = env.reset(seed=seed)
    while True:
        obs, _, terminated, truncated, info = env.step(act(weights, obs, env.unwrapped))
        if terminated or truncated:
            return json.loads(info["result_json"])


def make_env() -> gymnasium.Env:
    """The environment the agent is trained and scored on."""
    return gymnasium.make(
        "dvfslab/Dvfs-v0",
        platform=PLATFORM,
        workload=WORKLOAD,
        decision_ms=DECISION_MS,
        duration_s=SECONDS,
    )


def train(generations: int, seed: int = 0) -> tuple[np.ndarray, int]:
    """CMA-ES over the weights, each candidate scored by its mean reward on TRAIN_SEEDS.
    Returns the best weights and the number of episodes run."""
    env = make_env()
    npol = len(env.unwrapped.tables_khz)
    es = cma.CMAEvolutionStrategy(
        np.zeros(npol * FEATURES), 1.0, {"seed": seed + 1, "verbose": -9, "maxiter": generations}
    )
    episodes = 0
    while not es.stop():
        candidates = es.ask()
        costs = []
        for w in candidates:
            costs.append(-np.mean([reward(episode(env, np.asarray(w), s)) for s in TRAIN_SEEDS]))
            episodes += len(TRAIN_SEEDS)
        es.tell(candidates, costs)
    return np.asarray(es.result.xbest), episodes


def evaluate(weights: np.ndarray) -> dict[str, dict[str, float]]:
    """Mean reward, energy and jank on TEST_SEEDS: the agent, then each built-in governor."""
    env = make_env()
    rows: dict[str, list[dict[str, Any]]] = {
        "agent": [episode(env, weights, s) for s in TEST_SEEDS]
    }
    for governor in GOVERNORS:
        rows[governor] = [
            dvfslab.simulate(PLATFORM, governor, WORKLOAD, duration_s=SECONDS, seed=s).to_dict()
            for s in TEST_SEEDS
        ]
    return {
        name: {
            "reward": float(np.mean([reward(r) for r in results])),
            "energy_j": float(np.mean([r["energy_j"] for r in results])),
            "jank_pct": float(np.mean([r["metric"]["value"] for r in results])),
        }
        for name, results in rows.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--generations", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0, help="CMA-ES's seed")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    start = time.perf_counter()
    weights, episodes = train(args.generations, args.seed)
    trained_s = time.perf_counter() - start
    table = evaluate(weights)
    out = {
        "reward": f"-(energy J + {JANK_J:g} J x jank fraction)",
        "train_seeds": list(TRAIN_SEEDS),
        "test_seeds": list(TEST_SEEDS),
        "generations": args.generations,
        "episodes": episodes,
        "train_wall_s": round(trained_s, 1),
        "results": table,
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(
        f"trained in {trained_s:.1f} s ({episodes} episodes); mean over seeds "
        f"{', '.join(map(str, TEST_SEEDS))}; reward {out['reward']}"
    )
    print(f"{'':<16} {'reward':>8} {'energy J':>9} {'jank %':>7}")
    for name, row in table.items():
        print(f"{name:<16} {row['reward']:>8.3f} {row['energy_j']:>9.3f} {row['jank_pct']:>7.1f}")


if __name__ == "__main__":
    main()
