#!/usr/bin/env python3
"""Training curves of rlflow agents: the cost ratio (cost after / before) of each training
graph against real environment steps, model-free (`rlflow train --agent mf`) and
model-based (`--agent mb`) runs on the same axes, one panel per graph, and a last panel of
the mean episode return: mf's over its real episodes, mb's over its controller's episodes
in the dream (the world model's rewards, not measured ones).

    tools/training_curves.py --out curves RUN_DIR... [--greedy GRAPH=RATIO ...] [--x steps|seconds]

Each RUN_DIR holds a train.jsonl. Model-free lines count `env_steps`, model-based lines
`real_steps` (the dream's steps are not real ones). The curve is `final_cost_ratio` (mf:
the last finished training episode; mb: the controller's last greedy episode); runs of
the same agent on the same graph are drawn in one colour, one line per seed. Writes
OUT.png and OUT.svg, and prints, per run, the first real step at which its curve reached
its last value. With `--x seconds` the x axis is wall-clock seconds of training instead
(mf: the sum of its updates' `seconds`; mb: `elapsed_seconds`, the world model's training
included), for rewards whose real steps are expensive (`--reward ort-latency`)."""
import argparse
import json
import os
import sys
import figures


def read_run(path, x):
    lines = [json.loads(l) for l in open(os.path.join(path, "train.jsonl")) if l.strip()]
    if not lines:
        raise SystemExit(f"{path}/train.jsonl: no lines")
    agent = "mb" if "real_steps" in lines[0] else "mf"
    steps_key = "real_steps" if agent == "mb" else "env_steps"
    curves, returns = {}, []
    elapsed = 0.0
    for line in lines:
        if x == "seconds":
            elapsed = line["elapsed_seconds"] if agent == "mb" else elapsed + line["seconds"]
        at = line[steps_key] if x == "steps" else elapsed
        for graph, ratio in line["final_cost_ratio"].items():
            if ratio is not None:
                curves.setdefault(graph, []).append((at, ratio))
        mean_return = line["dream"].get("mean_return") if agent == "mb" else line.get("mean_return")
        if mean_return is not None:
            returns.append((at, mean_return))
    return agent, curves, returns


def first_reach(points, tolerance=1e-4):
    target = points[-1][1]
    for steps, ratio in points:
        if ratio <= target + tolerance:
            return steps, target
    return points[-1]


def draw_returns(ax, runs, colours, xlabel):
    """The mean episode return of each run: mf's real episodes, mb's dreamed ones."""
    labels = {"mf": "mf (real episodes)", "mb": "mb (in the dream)"}
    drawn = set()
    for _, agent, _, returns in runs:
        if returns:
            ax.plot([p[0] for p in returns], [p[1] for p in returns], color=colours[agent], alpha=0.8,
                    label=labels[agent] if agent not in drawn else None, marker="o" if agent == "mb" else None, markersize=3)
            drawn.add(agent)
    ax.set_xscale("log")
    ax.set_title("mean episode return")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("return")
    if drawn:
        ax.legend()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--out", required=True, help="file name without extension")
    parser.add_argument("--greedy", nargs="*", default=[], help="GRAPH=RATIO: greedy search's ratio, drawn as a line")
    parser.add_argument("--x", choices=["steps", "seconds"], default="steps",
                        help="x axis: real environment steps, or wall-clock seconds of training")
    args = parser.parse_args()
    unit = "real steps" if args.x == "steps" else "s"
    plt = figures.pyplot()
    runs = [(path, *read_run(path, args.x)) for path in args.runs]
    graphs = sorted({g for _, _, curves, _ in runs for g in curves})
    greedy = dict(item.split("=", 1) for item in args.greedy)
    fig, axes = plt.subplots(1, len(graphs) + 1, figsize=(5 * (len(graphs) + 1), 4), squeeze=False)
    colours = {"mf": "tab:blue", "mb": "tab:orange"}
    xlabel = "real environment steps" if args.x == "steps" else "wall-clock seconds of training"
    for ax, graph in zip(axes[0], graphs):
        drawn = set()
        for path, agent, curves, _ in runs:
            if graph not in curves:
                continue
            points = curves[graph]
            label = agent if agent not in drawn else None
            drawn.add(agent)
            ax.plot([p[0] for p in points], [p[1] for p in points], color=colours[agent], alpha=0.8, label=label,
                    marker="o" if agent == "mb" else None, markersize=3)
            steps, ratio = first_reach(points)
            print(f"{path}: {agent} {graph}: reached {ratio:.5f} at {steps:.0f} {unit} (last point {points[-1][0]:.0f})")
        if graph in greedy:
            ax.axhline(float(greedy[graph]), color="gray", linestyle="--", label="greedy")
        ax.set_xscale("log")
        ax.set_title(graph)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("cost ratio (after / before)")
        ax.legend()
    draw_returns(axes[0][-1], runs, colours, xlabel)
    figures.save(fig, args.out)


if __name__ == "__main__":
    main()
