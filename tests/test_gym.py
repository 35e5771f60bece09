"""dvfslab.gym.DvfsEnv: the simulator as a Gymnasium environment."""

from __future__ import annotations

import json

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import dvfslab
from dvfslab.gym import ENV_ID, DvfsEnv

WORKLOAD = "periodic:threads=4"


def test_it_is_a_gymnasium_environment():
    env = DvfsEnv("pixel6", WORKLOAD, decision_ms=10, duration_s=0.5)
    check_env(env, skip_render_check=True)
    assert list(env.action_space.nvec) == [len(t) for t in env.tables_khz]
    assert env.policy_cpus == [[0, 1, 2, 3], [4, 5], [6, 7]]


def test_an_action_is_the_frequency_every_cpu_of_the_policy_runs():
    env = DvfsEnv("pixel6", WORKLOAD, decision_ms=10, duration_s=0.5, start_opp=[0, 0, 0])
    obs, _ = env.reset(seed=1)
    done, steps, info = False, 0, {}
    while not done:
        obs, reward, terminated, truncated, info = env.step([2, 1, 0])
        done = terminated or truncated
        steps += 1
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
            _, reward, terminated, truncated, info = env.step(action)
            done = terminated or truncated
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


def episode(env, action=None, seed=0):
    """Every step's (obs, reward, terminated, truncated, info) of one episode."""
    env.reset(seed=seed)
    steps, done = [], False
    while not done:
        step = env.step(env.action_space.sample() if action is None else action)
        steps.append(step)
        done = step[2] or step[3]
    return steps


def test_every_observation_is_finite_and_in_its_space_the_last_included():
    env = DvfsEnv("pixel6", WORKLOAD, decision_ms=10, duration_s=0.3)
    env.action_space.seed(0)
    for obs, *_ in episode(env):
        assert env.observation_space.contains(obs)
        assert all(np.isfinite(v).all() for v in obs.values())


def test_the_time_limit_truncates_and_a_workload_that_ends_terminates():
    steps = episode(DvfsEnv("pixel6", WORKLOAD, duration_s=0.2))
    assert [(s[2], s[3]) for s in steps[-2:]] == [(False, False), (False, True)]
    steps = episode(DvfsEnv("pixel6", "hackbench", duration_s=10))
    assert (steps[-1][2], steps[-1][3]) == (True, False)  # its tasks all exited


def test_the_first_interval_runs_at_the_start_opp_or_under_the_governor():
    top = [16 - 6, 13, 16]  # pixel6's top entries
    fixed = DvfsEnv("pixel6", WORKLOAD, duration_s=0.3, governor="performance", start_opp=top)
    by_governor = DvfsEnv("pixel6", WORKLOAD, duration_s=0.3, governor="performance")
    alone = dvfslab.simulate("pixel6", "performance", WORKLOAD, duration_s=0.3, seed=2)
    for env in (fixed, by_governor):
        assert [len(t) - 1 for t in env.tables_khz] == top
        result = json.loads(episode(env, top, seed=2)[-1][4]["result_json"])
        # At the top from the start, as `performance` runs: the same energy.
        assert result["energy_j"] == pytest.approx(alone.energy_j, rel=1e-9)


def test_it_is_registered_for_gymnasium_make_and_vectorised():
    env = gymnasium.make(ENV_ID, platform="hikey960", workload=WORKLOAD, duration_s=0.1)
    assert env.unwrapped.policy_cpus == [[0, 1, 2, 3], [4, 5, 6, 7]]
    envs = gymnasium.make_vec(
        ENV_ID, num_envs=2, vectorization_mode="sync", workload=WORKLOAD, duration_s=0.1
    )
    obs, _ = envs.reset(seed=[1, 2])
    assert obs["util"].shape == (2, 8)
    for _ in range(12):  # past the end of the first episodes: they reset themselves
        obs, reward, terminated, truncated, _ = envs.step(envs.action_space.sample())
        assert reward.shape == terminated.shape == truncated.shape == (2,)
    envs.close()
    asynchronous = gymnasium.vector.AsyncVectorEnv(
        [lambda: DvfsEnv("pixel6", WORKLOAD, duration_s=0.1)] * 2
    )
    obs, _ = asynchronous.reset(seed=3)
    obs, reward, *_ = asynchronous.step(asynchronous.action_space.sample())
    assert np.isfinite(reward).all()
    asynchronous.close()


def test_latency_and_missed_deadlines_are_in_info_and_the_reward():
    env = DvfsEnv("pixel6", "uibench:frames=60", duration_s=5)
    steps = episode(env, [0, 0, 0], seed=1)
    frames = sum(s[4]["responses"] for s in steps)
    late = sum(s[4]["misses"] for s in steps)
    result = json.loads(steps[-1][4]["result_json"])
    assert frames == 60
    # Every janky frame missed its vsync; of a run of late frames Jankbench counts only the
    # first (and any twice late), so its share is smaller.
    assert 0 < result["metric"]["value"] < 100 * late / frames
    assert steps[-1][2]  # all frames done: terminated
    costly = DvfsEnv("pixel6", "uibench:frames=60", duration_s=5, miss_weight=1, latency_weight=1)
    again = episode(costly, [0, 0, 0], seed=1)
    for a, b in zip(steps, again):
        extra = a[4]["misses"] + a[4]["response_sum_s"]
        assert b[1] == pytest.approx(a[1] - extra)


def test_the_agent_drives_some_policies_and_a_built_in_governor_the_rest():
    env = DvfsEnv("pixel6", "cpu-bound:threads=8", duration_s=0.3, policies=[2])
    check_env(env, skip_render_check=True)
    assert list(env.action_space.nvec) == [len(env.tables_khz[2])]
    steps = episode(env, [3], seed=0)
    assert {int(s[0]["opp"][2]) for s in steps} == {3}
    # schedutil takes the busy little and middle clusters to their top.
    assert [int(o) for o in steps[-1][0]["opp"][:2]] == [10, 13]
    with pytest.raises(ValueError, match="no policy 5"):
        DvfsEnv("pixel6", WORKLOAD, policies=[5])


def test_eas_stays_off_as_in_linux_and_eas_1_says_so():
    with pytest.warns(RuntimeWarning, match="eas=1: EAS is off under the environment"):
        DvfsEnv("pixel6", WORKLOAD, system="eas=1", duration_s=0.1)


@pytest.mark.parametrize("decision_ms", [1e-9, 0, -1, float("nan"), float("inf")])
def test_a_decision_interval_below_1_ns_is_refused(decision_ms):
    with pytest.raises(dvfslab.ConfigError, match=r"^decision_ms must be a number >= 1e-06"):
        DvfsEnv("pixel6", WORKLOAD, duration_s=0.2, decision_ms=decision_ms)


def test_a_decision_interval_as_long_as_the_run_is_refused():
    # The run would end before the first decision, and step() could only fail.
    with pytest.raises(dvfslab.ConfigError, match=r"^decision_ms \(200\) must be shorter"):
        DvfsEnv("pixel6", WORKLOAD, duration_s=0.2, decision_ms=200)
