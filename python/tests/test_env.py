"""rlflow.Env: observation layout, masks, rewards, seeding, refused actions, and Gymnasium's API as
a Gymnasium user meets it (spaces, sample, contains, seeds, close)."""

import threading

import numpy as np
import pytest

import rlflow

KEYS = {"nodes", "edges", "globals", "senders", "receivers", "xfer_mask", "location_mask"}


@pytest.fixture(scope="module")
def env():
    return rlflow.Env(rlflow.zoo("squeezenet1_1"), rules="builtin", cost="analytic", max_steps=30, max_locations=16)


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
    counts = obs["location_mask"].sum(axis=1)
    r = int(np.flatnonzero((counts > 0) & (counts < env.max_locations))[0])  # a rule with a masked location in the space
    count = int(counts[r])
    with pytest.raises(rlflow.PreconditionError, match="forbid"):
        env.step((r, count))
    with pytest.raises(rlflow.PreconditionError, match=r"0 <= xfer <= \d+ .*; got \(\d+, 0\)"):
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
    envs = [rlflow.Env(graph, rules=rules, cost="analytic", max_steps=30, max_locations=16) for _ in range(2)]
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


# Gymnasium's API, as a Gymnasium user would drive it.

def test_the_spaces_describe_actions_and_observations(env):
    obs, info = env.reset(seed=11)
    assert env.observation_space.contains(obs) and obs in env.observation_space
    space = env.action_space
    assert space.shape == (2,) and list(space.nvec) == [env.num_xfers + 1, env.max_locations]
    assert space.contains((env.num_xfers, 0)) and space.contains(np.array([0, env.max_locations - 1]))
    for outside in [(env.num_xfers + 1, 0), (0, env.max_locations), (-1, 0), 3, (1, 2, 3), "ab", (0.5, 0)]:
        assert not space.contains(outside), outside
    # Unmasked samples lie in the box; masked ones are valid for the observation.
    assert all(space.contains(space.sample()) for _ in range(50))
    for _ in range(50):
        xfer, location = space.sample(mask=obs)
        assert obs["xfer_mask"][xfer] and (xfer == env.num_xfers or obs["location_mask"][xfer, location])
    # A damaged observation is not in the space; a sampled one is.
    bad = dict(obs, nodes=obs["nodes"][:, :-1])
    assert not env.observation_space.contains(bad) and not env.observation_space.contains({"nodes": obs["nodes"]})
    assert env.observation_space.contains(env.observation_space.sample())
    assert env.metadata["render_modes"] == [] and env.render_mode is None


def masked_episode(env, seed):
    obs, info = env.reset(seed=seed)
    actions, rewards, done = [], [], False
    while not done:
        action = env.action_space.sample(mask=obs)
        obs, reward, terminated, truncated, info = env.step(action)
        actions.append(tuple(int(a) for a in action))
        rewards.append(reward)
        done = terminated or truncated
    return actions, rewards, info


def test_a_seeded_reset_seeds_np_random_and_the_action_space(env):
    env.reset(seed=21)
    first = env.np_random.integers(1 << 30, size=4)
    env.reset(seed=21)
    np.testing.assert_array_equal(env.np_random.integers(1 << 30, size=4), first)
    a, b = masked_episode(env, 5), masked_episode(env, 5)
    assert a == b
    assert any(masked_episode(env, s)[0] != a[0] for s in (6, 7, 8))


def test_a_random_gymnasium_episode_rewards_sum_to_the_cost_change(env):
    actions, rewards, info = masked_episode(env, 31)
    assert len(actions) <= env.max_steps
    saved = (info["initial_cost_ms"] - info["cost_ms"]) / info["initial_cost_ms"] * env.reward_scale
    assert sum(rewards) == pytest.approx(saved, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("action", [3, "x", (1, 2, 3), (-1, 0), None, (0.5, 1)])
def test_an_action_outside_the_space_raises_rlflow_error_naming_the_range(env, action):
    env.reset(seed=1)
    with pytest.raises(rlflow.PreconditionError, match=rf"0 <= xfer <= {env.num_xfers} .*0 <= location < {env.max_locations}"):
        env.step(action)
    env.step(np.array([env.num_xfers, 0]))  # the episode goes on: NO-OP ends it


def test_reset_takes_options_and_close_ends_the_environment():
    env = rlflow.Env(rlflow.zoo("squeezenet1_1"), rules="builtin", cost="analytic", max_steps=5)
    env.reset(seed=0, options={})
    with pytest.raises(rlflow.PreconditionError, match="no options"):
        env.reset(options={"graph": 1})
    env.close()
    env.close()  # twice is fine
    with pytest.raises(rlflow.PreconditionError, match="closed"):
        env.reset()


def test_the_default_rules_are_the_agents_and_the_default_cost_the_targets():
    """The CLI agent's action space: the built-in rules, then the generated ones that match
    the graph; the cost is the default target's, as `optimize` prices."""
    graph = rlflow.zoo("squeezenet1_1")
    env = rlflow.Env(graph, max_steps=5)
    builtin = rlflow.rules.load("builtin").names
    assert len(builtin) < env.num_xfers < len(rlflow.rules.load("default"))
    assert env.rule_names[: len(builtin)] == builtin
    obs, _ = env.reset(seed=0)
    assert obs["xfer_mask"][len(builtin):-1].all(), "every generated rule kept matches the graph"
    _, report = rlflow.optimize(graph, search="greedy", budget=1, guard="none", cost_cache="none")
    assert env.cost_backend == report["cost_backend"]


def test_with_gymnasium_the_env_is_a_gymnasium_env():
    gymnasium = pytest.importorskip("gymnasium", reason="gymnasium is not installed; rlflow.Env works without it")
    env = gymnasium.make("rlflow/GraphRewrite-v0", graph=rlflow.zoo("squeezenet1_1"), rules="builtin", cost="analytic")
    assert isinstance(env.unwrapped, gymnasium.Env) and isinstance(env.unwrapped.action_space, gymnasium.spaces.Space)
    obs, _ = env.reset(seed=0)
    env.step(env.unwrapped.action_space.sample(mask=obs))
