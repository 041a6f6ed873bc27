"""A random agent over rlflow.Env: the loop a Python RL agent would run.

    python3 examples/python/random_agent.py [--model squeezenet1_1] [--episodes 5] [--seed 0]

Each step takes a random valid action (env.action_space.sample(mask=obs), Gymnasium's way:
a rule with a location, or NO-OP, then one of its locations); an agent of your own reads
the observation's arrays and masks instead. The rewards of an episode add up to the
percent of the cost it saved.
"""

import argparse

import numpy as np

import rlflow


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="squeezenet1_1", help="a zoo model (rlflow.zoo_names())")
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    env = rlflow.Env(rlflow.zoo(args.model), cost="analytic", max_steps=50)  # a new agent's rules: those that match
    print(f"{args.model}: {env.num_xfers} rules (action xfer {env.num_xfers} is NO-OP), "
          f"up to {env.max_locations} locations each; cost {env.cost_backend}")
    for episode in range(args.episodes):
        obs, info = env.reset(seed=args.seed + episode)
        total, done = 0.0, False
        while not done:
            xfer, location = env.action_space.sample(mask=obs)
            # What an agent sees: node features (n, fn), edges (E, fe) with senders and
            # receivers, the xfer mask (N+1) and each xfer's location mask (N, L).
            assert obs["xfer_mask"][xfer] and (xfer == env.num_xfers or obs["location_mask"][xfer, location])
            obs, reward, terminated, truncated, info = env.step((int(xfer), int(location)))
            total += reward
            done = terminated or truncated
        saved = 100 * (1 - info["cost_ms"] / info["initial_cost_ms"])
        print(f"episode {episode}: {info['steps']} steps, return {total:.3f} (% of the cost saved) "
              f"(cost {info['initial_cost_ms']:.3f} -> {info['cost_ms']:.3f} ms, {saved:.2f}% saved), "
              f"{obs['nodes'].shape[0]} nodes, {int(np.count_nonzero(obs['xfer_mask'][:-1]))} rules applicable")


if __name__ == "__main__":
    main()
