"""Benchmark of the reinforcement-learning example (examples/gym/cma_agent.py): train the CMA-ES
agent from three CMA-ES seeds and score each on the held-out seeds beside the built-in
governors; prints one row per training seed, with its wall time, and the governors' rows.
Not a test: it needs the `rl` extra (`pip install 'dvfslab[rl]'`) and takes about a minute.

    python benches/rl_agent.py [--generations 40] [--seeds 0,1,2]
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "gym" / "cma_agent.py"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--generations", type=int, default=40)
    parser.add_argument("--seeds", default="0,1,2", help="CMA-ES seeds, one training each")
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("cma_agent", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    agent = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(agent)
    print(
        f"reward -(energy J + {agent.JANK_J:g} J x jank fraction), {agent.PLATFORM}, "
        f"{agent.WORKLOAD}, {agent.SECONDS:g} s; train seeds {agent.TRAIN_SEEDS}, "
        f"test seeds {agent.TEST_SEEDS}, {args.generations} generations"
    )
    print(f"{'':<16} {'reward':>8} {'energy J':>9} {'jank %':>7} {'wall s':>7}")
    table = {}
    for seed in (int(s) for s in args.seeds.split(",")):
        start = time.perf_counter()
        weights, _ = agent.train(args.generations, seed)
        wall = time.perf_counter() - start
        table = agent.evaluate(weights)
        row = table["agent"]
        name = f"agent (cma {seed})"
        print(
            f"{name:<16} {row['reward']:>8.3f} {row['energy_j']:>9.3f} {row['jank_pct']:>7.1f} "
            f"{wall:>7.1f}"
        )
    for name, row in table.items():
        if name != "agent":
            print(
                f"{name:<16} {row['reward']:>8.3f} {row['energy_j']:>9.3f} {row['jank_pct']:>7.1f}"
            )


if __name__ == "__main__":
    main()
