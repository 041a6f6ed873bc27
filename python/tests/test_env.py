"""rlflow.Env: observation layout, masks, rewards, seeding and refused actions."""

import threading

import numpy as np
import pytest

import rlflow

KEYS = {"nodes", "edges", "globals", "senders", "receivers", "xfer_mask", "location_mask"}


@pytest.fixture(scope="module")
def env():
    return rlflow.Env(rlflow.zoo("squeezenet1_1"), rules="builtin", max_steps=30, max_locations=16)


def check_observation(env, obs, info):
    n, lmax = env.num_xfers, env.max_locations
    assert set(obs) == KEYS
    nodes, edges = obs["nodes"], obs["edges"]
    assert nodes.dtype == np.float64 and nodes.ndim == 2 and nodes.shape[0] == info["graph_nodes"]
    assert edges.ndim == 2 and edges.shape[0] == obs["senders"].shape[0] == obs["receivers"].shape[0]
    assert obs["senders"].dtype == np.int32 and obs["receivers"].dtype == np.int32
    assert obs["senders"].min() >= 0 and obs["receivers"].max() < nodes.shape[0]
    assert obs["globals"].ndim == 1 and np.isfinite(nodes).all()
    xm, lm = obs["xfer_mask"], obs["location_mask"]
    assert xm.dtype == np.bool_ and xm.shape == (n + 1,) and xm[-1]  # NO-OP is always allowed
    assert lm.dtype == np.bool_ and lm.shape == (n, lmax)
    np.testing.assert_array_equal(xm[:n], lm.any(axis=1))
    counts = lm.sum(axis=1)
    for r in np.flatnonzero(counts):  # the valid locations come first in the row
        assert lm[r, : counts[r]].all() and not lm[r, counts[r]:].any()
    # The arrays own no copy: they take over the environment's buffers.
    assert not nodes.flags.owndata and not xm.flags.owndata


def test_reset_and_step_give_consistent_observations(env):
    obs, info = env.reset(seed=1)
    check_observation(env, obs, info)
    assert info["cost_ms"] == info["initial_cost_ms"] == env.initial_cost_ms > 0
    assert obs["xfer_mask"][: env.num_xfers].any(), "SqueezeNet offers rewrites (conv + relu fusion)"
    r = int(np.flatnonzero(obs["xfer_mask"][:-1])[0])
    obs, reward, terminated, truncated, info = env.step((r, 0))
    check_observation(env, obs, info)
    assert not terminated and not truncated and info["rule"] == env.rule_names[r] and info["steps"] == 1
    assert reward == pytest.approx((info["initial_cost_ms"] - info["cost_ms"]) / info["initial_cost_ms"] * env.reward_scale)


def episode(env, seed):
    obs, info = env.reset(seed=seed)
    actions, rewards, done = [], [], False
    while not done:
        action = env.sample_action()
        obs, reward, terminated, truncated, info = env.step(action)
        actions.append(action)
        rewards.append(reward)
        done = terminated or truncated
    return actions, rewards, obs, info


def test_a_random_episode_rewards_sum_to_the_cost_change(env):
    actions, rewards, _, info = episode(env, seed=4)
    saved = (info["initial_cost_ms"] - info["cost_ms"]) / info["initial_cost_ms"] * env.reward_scale
    assert sum(rewards) == pytest.approx(saved, rel=1e-9, abs=1e-12)
    assert len(actions) <= env.max_steps and env.steps == len(actions)


def test_seeding_gives_identical_episodes(env):
    first, second = episode(env, seed=7), episode(env, seed=7)
    assert first[0] == second[0] and first[1] == second[1]
    for key in KEYS:
        np.testing.assert_array_equal(first[2][key], second[2][key])
    other = [episode(env, seed=s)[0] for s in (8, 9, 10)]
    assert any(actions != first[0] for actions in other)


def test_a_masked_action_raises_and_the_episode_goes_on(env):
    obs, _ = env.reset(seed=2)
    r = int(np.flatnonzero(obs["xfer_mask"][:-1])[0])
    count = int(obs["location_mask"][r].sum())
    with pytest.raises(rlflow.PreconditionError, match="forbid"):
        env.step((r, count))
    with pytest.raises(rlflow.PreconditionError, match="out of range"):
        env.step((env.num_xfers + 1, 0))
    _, _, terminated, _, _ = env.step((env.num_xfers, 0))  # NO-OP ends the episode
    assert terminated
    with pytest.raises(rlflow.PreconditionError):
        env.step((env.num_xfers, 0))


def test_the_episode_graph_is_a_runnable_copy(env):
    obs, _ = env.reset(seed=3)
    start = env.graph()
    r = int(np.flatnonzero(obs["xfer_mask"][:-1])[0])
    env.step((r, 0))
    after = env.graph()
    assert after.num_nodes != start.num_nodes or after.info()["op_histogram"] != start.info()["op_histogram"]
    a, b = start.run(seed=1), after.run(seed=1)
    for name in start.outputs:
        np.testing.assert_allclose(b[name], a[name], rtol=1e-4, atol=1e-4)


def test_separate_envs_step_in_parallel_threads():
    rules = rlflow.rules.load("builtin")  # one rule set, shared by both environments
    graph = rlflow.zoo("squeezenet1_1")
    envs = [rlflow.Env(graph, rules=rules, max_steps=30, max_locations=16) for _ in range(2)]
    alone = episode(envs[0], seed=5)
    results = [None, None]

    def run(i):
        results[i] = episode(envs[i], seed=5)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for actions, rewards, _, _ in results:
        assert actions == alone[0] and rewards == alone[1]
