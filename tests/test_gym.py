"""dvfslab.gym.DvfsEnv: the simulator as a Gymnasium environment."""

from __future__ import annotations

import json

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import dvfslab
from dvfslab.gym import DvfsEnv

WORKLOAD = "periodic:threads=4"


def test_it_is_a_gymnasium_environment():
    env = DvfsEnv("pixel6", WORKLOAD, decision_ms=10, duration_s=0.5)
    check_env(env, skip_render_check=True)
    assert list(env.action_space.nvec) == [len(t) for t in env.tables_khz]
    assert env.policy_cpus == [[0, 1, 2, 3], [4, 5], [6, 7]]


def test_an_action_is_the_frequency_every_cpu_of_the_policy_runs():
    env = DvfsEnv("pixel6", WORKLOAD, decision_ms=10, duration_s=0.5)
    obs, _ = env.reset(seed=1)
    done, steps, info = False, 0, {}
    while not done:
        obs, reward, done, truncated, info = env.step([2, 1, 0])
        steps += 1
        assert not truncated
        assert reward <= 0.0  # energy and lost time are costs
        assert info["energy_j"] >= 0.0
        assert list(obs["opp"]) == [2, 1, 0]
        assert ((obs["util"] >= 0.0) & (obs["util"] <= 1.0)).all()
        assert ((obs["idle"] >= 0.0) & (obs["idle"] <= 1.0)).all()
    assert steps == 49  # 0.5 s in 10-ms decisions, the first at reset
    result = json.loads(info["result_json"])
    little = [env.tables_khz[0][2]]
    for cpu in result["per_cpu"][:4]:
        ran = {int(k) for k, s in cpu["time_in_freq"].items() if s > 0.011}
        assert ran <= set(little) | {env.tables_khz[0][0]}  # the first interval at the start


def test_the_same_seed_gives_the_same_episode_and_faster_is_costlier():
    def run(action: list[int], seed: int) -> tuple[float, float]:
        env = DvfsEnv("pixel6", WORKLOAD, decision_ms=10, duration_s=0.5)
        env.reset(seed=seed)
        total, lost, done = 0.0, 0.0, False
        while not done:
            _, reward, done, _, info = env.step(action)
            total += reward
            lost += info["lost_s"]
        return total, lost

    assert run([5, 5, 5], seed=4) == run([5, 5, 5], seed=4)
    slow, fast = run([0, 0, 0], seed=4), run([10, 13, 16], seed=4)
    assert fast[1] == pytest.approx(0.0, abs=1e-12)  # at the top frequency nothing is lost
    assert slow[1] > 0.0


def test_bad_actions_are_refused():
    env = DvfsEnv("pixel6", WORKLOAD, duration_s=0.2)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="policy 0: OPP index 99"):
        env.step([99, 0, 0])
    with pytest.raises(ValueError, match="one OPP index per policy"):
        env.step(np.array([0, 0]))
    with pytest.raises(dvfslab.ConfigError, match=r"^action: policy 1: OPP index -1 is not"):
        env.step([0, -1, 0])
    with pytest.raises(dvfslab.ConfigError, match=r"one OPP index per policy \(3\), integers"):
        env.step([0.5, 0, 0])


@pytest.mark.parametrize("decision_ms", [1e-9, 0, -1, float("nan"), float("inf")])
def test_a_decision_interval_below_1_ns_is_refused(decision_ms):
    with pytest.raises(dvfslab.ConfigError, match=r"^decision_ms must be a number >= 1e-06"):
        DvfsEnv("pixel6", WORKLOAD, duration_s=0.2, decision_ms=decision_ms)
