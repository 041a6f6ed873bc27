#!/usr/bin/env python3
"""The temperature sweep of the model-based agent: what the dream's temperature
(`rlflow train --agent mb --temperature T`: the mixture's logits divided by T, its noise
scaled by sqrt(T)) does to the controller that trains in it.

    tools/temperature_sweep.py --out FILE AGENT_DIR...

Each AGENT_DIR is an mb agent (agent.json records its temperature; train.jsonl its
iterations). Runs are grouped by temperature, one point per seed. Writes FILE.png and
FILE.svg with two panels against the temperature:
- the cost ratio (after / before) the controller reached on the real graphs at the end of
  training (the mean over the agent's graphs; lower is better);
- the controller's mean return in the dream at its last iteration.
A controller that earns much in the dream and little on the real graph has learned to
exploit the world model's errors; a warmer dream makes that harder (Ha and Schmidhuber,
World Models, 2018). Also prints the figures as a Markdown table."""
import argparse
import json
import math
import os
import sys
import figures


def read_agent(path):
    with open(os.path.join(path, "agent.json")) as f:
        agent = json.load(f)
    if agent.get("format") != "rlflow-mb-agent":
        sys.exit(f"{path}: not a model-based agent (format {agent.get('format')!r})")
    lines = [json.loads(l) for l in open(os.path.join(path, "train.jsonl")) if l.strip()]
    if not lines:
        sys.exit(f"{path}/train.jsonl: no lines")
    last = lines[-1]
    ratios = [r for r in last["final_cost_ratio"].values() if r is not None]
    return {
        "temperature": agent["temperature"],
        "seed": agent["seed"],
        "ratio": sum(ratios) / len(ratios) if ratios else float("nan"),
        "dream_return": last["dream"].get("mean_return") or float("nan"),
        "real_steps": last["real_steps"],
    }


def mean_spread(xs):
    xs = [x for x in xs if not math.isnan(x)]
    if not xs:
        return float("nan"), 0.0
    mean = sum(xs) / len(xs)
    return mean, math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("agents", nargs="+")
    parser.add_argument("--out", required=True, help="file name without extension")
    args = parser.parse_args()
    plt = figures.pyplot()
    runs = [read_agent(path) for path in args.agents]
    temperatures = sorted({r["temperature"] for r in runs})
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    print("| temperature | seeds | real cost ratio | dream return |\n|---|---|---|---|")
    for key, ax, ylabel in (("ratio", axes[0], "real cost ratio at the end (lower is better)"),
                            ("dream_return", axes[1], "controller's mean return in the dream")):
        ax.scatter([r["temperature"] for r in runs], [r[key] for r in runs], color="tab:orange", alpha=0.5, s=12, label="one seed")
        stats = [mean_spread([r[key] for r in runs if r["temperature"] == t]) for t in temperatures]
        ax.errorbar(temperatures, [s[0] for s in stats], yerr=[s[1] for s in stats], color="tab:orange", capsize=3, label="mean ± sd")
        ax.set_xlabel("dream temperature")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
    for t in temperatures:
        group = [r for r in runs if r["temperature"] == t]
        ratio, ratio_sd = mean_spread([r["ratio"] for r in group])
        dream, dream_sd = mean_spread([r["dream_return"] for r in group])
        print(f"| {t:g} | {len(group)} | {ratio:.4f} ± {ratio_sd:.4f} | {dream:.3f} ± {dream_sd:.3f} |")
    figures.save(fig, args.out)


if __name__ == "__main__":
    main()
