#!/usr/bin/env python3
"""Figures of an `rlflow eval` run: what its results.json holds, drawn.

    tools/eval_figures.py EVAL_DIR [--out FOLDER]

Writes PNG and SVG files into FOLDER (default: EVAL_DIR/figures):
- speedup_cost: bars of the cost model's speed-up (cost before / after) per graph and
  method, the mean over seeds, with the spread as error bars;
- speedup_ort_LEVEL_tTHREADS: the same for ONNX Runtime's measured speed-up, one figure per
  level and thread count eval timed at (--ort, --ort-level);
- rules_heatmap: how often each rule was applied (in the written graphs, summed over the
  methods and seeds) on each graph; rules never applied are left out.

With --compare LABEL=EVAL_DIR... (tools/transfer.sh passes zero-shot, fine-tuned and
per-graph), it also writes transfer.{png,svg}: per graph, the speed-up of the `mf` cells of
each labelled eval beside the baselines (taso, eqsat) of the first, on the graphs all of them
ran, and the seconds each
took to its result: search or inference seconds, plus the training seconds of an agent
that trained on that graph (a fine-tune, or a per-graph agent). A zero-shot agent's
training is shared by all graphs and not counted per graph. The same figures go to
transfer.md as a table.

With --ort timings, ort_noise.md gives ONNX Runtime's noise floor: the measured speed-ups
of the cells whose written model is their input unchanged (no rewrites applied), which
would be exactly 1 if timing had no noise.

Training curves come from tools/training_curves.py, which reads the agents' train.jsonl.
Needs matplotlib (Debian: python3-matplotlib)."""
import argparse
import json
import math
import os
import sys
import figures


def load(eval_dir):
    with open(os.path.join(eval_dir, "results.json")) as f:
        return json.load(f)


def mean_spread(xs):
    mean = sum(xs) / len(xs)
    var = sum((x - mean) ** 2 for x in xs) / (len(xs) - 1) if len(xs) > 1 else 0.0
    return mean, math.sqrt(var)


def at(cell, path):
    """The figure at `path` (keys separated by '/') in a cell, or None."""
    for key in path.split("/"):
        if not isinstance(cell, dict) or key not in cell:
            return None
        cell = cell[key]
    return cell


def table(results, path):
    """{graph: {method: (mean, spread)}} over the ok cells that have the figure at `path`."""
    out = {}
    for g in results["graphs"]:
        for m in results["methods"]:
            xs = [at(c, path) for c in results["cells"] if c["graph"] == g and c["method"] == m and c["status"] == "ok"]
            xs = [x for x in xs if x is not None]
            if xs:
                out.setdefault(g, {})[m] = mean_spread(xs)
    return out


def short(graph):
    return graph[4:] if graph.startswith("zoo:") else os.path.splitext(os.path.basename(graph))[0]


def bars(plt, results, key, ylabel, path):
    """Bars from 1 (no change) to each method's mean ratio per graph, spread as error bars."""
    data = table(results, key)
    if not data:
        return False
    graphs = [g for g in results["graphs"] if g in data]
    methods = results["methods"]
    width = 0.8 / len(methods)
    fig, ax = plt.subplots(figsize=(min(18, max(6, 0.16 * len(graphs) * len(methods) + 2)), 4.5))
    for k, m in enumerate(methods):
        xs = [i + (k - (len(methods) - 1) / 2) * width for i in range(len(graphs))]
        means = [data[g].get(m, (float("nan"), 0))[0] for g in graphs]
        spreads = [data[g].get(m, (0, 0))[1] for g in graphs]
        ax.bar(xs, [v - 1 for v in means], width, bottom=1, yerr=spreads, label=m, capsize=1.5)
    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.set_xticks(range(len(graphs)))
    ax.set_xticklabels([short(g) for g in graphs], rotation=35, ha="right", fontsize=8)
    ax.set_ylabel(ylabel, fontsize=9)
    ax.legend(fontsize=8, ncol=len(methods))
    figures.save(fig, path)
    return True


def heatmap(plt, results, path):
    counts = {}
    for c in results["cells"]:
        if c["status"] != "ok":
            continue
        for rule, n in c.get("rewrites", {}).items():
            counts.setdefault(rule, {}).setdefault(c["graph"], 0)
            counts[rule][c["graph"]] += n
    if not counts:
        return False
    rules = sorted(counts, key=lambda r: -sum(counts[r].values()))
    graphs = results["graphs"]
    grid = [[counts[r].get(g, 0) for g in graphs] for r in rules]
    fig, ax = plt.subplots(figsize=(max(6, 3 + 0.9 * len(graphs)), max(3, 1.5 + 0.3 * len(rules))))
    image = ax.imshow(grid, aspect="auto", cmap="viridis")
    for i, row in enumerate(grid):
        for j, n in enumerate(row):
            if n:
                ax.text(j, i, str(n), ha="center", va="center", fontsize=7, color="white" if n < max(map(max, grid)) / 2 else "black")
    ax.set_xticks(range(len(graphs)))
    ax.set_xticklabels([short(g) for g in graphs], rotation=30, ha="right")
    ax.set_yticks(range(len(rules)))
    ax.set_yticklabels(rules, fontsize=7)
    ax.set_title("rule applications in the written graphs (all methods and seeds)", fontsize=9)
    fig.colorbar(image, ax=ax, label="applications")
    figures.save(fig, path)
    return True


def seconds_to_result(cell):
    return cell["seconds"] + (cell.get("training_seconds", 0) if cell.get("agent_trained_on_graph") else 0)


def compare_table(graphs, series, path):
    """transfer.md: per graph, each series' mean speed-up by the cost model and seconds to its result."""
    lines = ["| graph | " + " | ".join(label for label, _, _ in series) + " |", "|---|" + "---|" * len(series)]
    for g in graphs:
        row = []
        for _, results, m in series:
            cells = [c for c in results["cells"] if c["graph"] == g and c["method"] == m and c["status"] == "ok"]
            if not cells:
                row.append("-")
                continue
            speedup = sum(c["speedup"] for c in cells) / len(cells)
            seconds = sum(seconds_to_result(c) for c in cells) / len(cells)
            row.append(f"{speedup:.4f} ({seconds:.1f} s)")
        lines.append(f"| {short(g)} | " + " | ".join(row) + " |")
    with open(path, "w") as f:
        f.write("Mean speed-up by the cost model over seeds (mean seconds to the result).\n\n" + "\n".join(lines) + "\n")


def noise_floor(results, path):
    """ort_noise.md: the ORT speed-ups of cells whose written model is their input unchanged."""
    lines = []
    for key in sorted({k for c in results["cells"] for k in c.get("ort", {})}):
        xs = sorted(c["ort"][key]["speedup"] for c in results["cells"]
                    if c["status"] == "ok" and not c.get("rewrites") and key in c.get("ort", {}))
        if xs:
            inside = sum(1 for x in xs if abs(x - 1) <= 0.02) / len(xs)
            lines.append(f"| {key} | {len(xs)} | {xs[len(xs) // 2]:.3f} | {xs[0]:.3f} | {xs[-1]:.3f} | {100 * inside:.0f}% |")
    if not lines:
        return False
    with open(path, "w") as f:
        f.write("ONNX Runtime's measured speed-up of cells written unchanged (no rewrites): exactly 1 without noise.\n\n"
                "| timing | cells | median | min | max | within 2% of 1 |\n|---|---|---|---|---|---|\n" + "\n".join(lines) + "\n")
    return True


def compare(plt, pairs, path, method="mf", baselines=("taso", "eqsat")):
    evals = [(label, load(d)) for label, d in pairs]
    graphs = [g for g in evals[0][1]["graphs"] if all(g in r["graphs"] for _, r in evals)]
    series = [(label, r, method) for label, r in evals] + [(b, evals[0][1], b) for b in baselines]
    compare_table(graphs, series, path + ".md")
    fig, axes = plt.subplots(2, 1, figsize=(min(18, max(8, 0.16 * len(graphs) * len(series) + 2)), 8))
    width = 0.8 / len(series)
    for ax, value, ylabel, log in ((axes[0], lambda c: c["speedup"], "speed-up by the cost model", False),
                                   (axes[1], seconds_to_result, "seconds to the result", True)):
        for k, (label, results, m) in enumerate(series):
            means = []
            for g in graphs:
                xs = [value(c) for c in results["cells"] if c["graph"] == g and c["method"] == m and c["status"] == "ok"]
                means.append(sum(xs) / len(xs) if xs else float("nan"))
            ax.bar([i + (k - (len(series) - 1) / 2) * width for i in range(len(graphs))], means, width, label=label)
        ax.set_xticks(range(len(graphs)))
        ax.set_xticklabels([short(g) for g in graphs], rotation=30, ha="right")
        ax.set_ylabel(ylabel)
        if log:
            ax.set_yscale("log")
    axes[0].axhline(1.0, color="gray", linewidth=0.8)
    axes[0].legend(fontsize=7)
    figures.save(fig, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("eval_dir")
    parser.add_argument("--out", help="folder of the figures (default: EVAL_DIR/figures)")
    parser.add_argument("--compare", nargs="*", default=[], metavar="LABEL=EVAL_DIR",
                        help="evals of one method by different agents (transfer: zero-shot, fine-tuned, per-graph)")
    args = parser.parse_args()
    plt = figures.pyplot()
    results = load(args.eval_dir)
    out = args.out or os.path.join(args.eval_dir, "figures")
    os.makedirs(out, exist_ok=True)
    written = []
    if bars(plt, results, "speedup", "speed-up by the cost model (before / after)", os.path.join(out, "speedup_cost")):
        written.append("speedup_cost")
    timings = sorted({key for c in results["cells"] for key in c.get("ort", {})})
    for key in timings:
        level, threads = key.rsplit("_t", 1)
        if bars(plt, results, f"ort/{key}/speedup", f"speed-up in ONNX Runtime, level {level}, {threads} thread(s)",
                os.path.join(out, f"speedup_ort_{key}")):
            written.append(f"speedup_ort_{key}")
    if heatmap(plt, results, os.path.join(out, "rules_heatmap")):
        written.append("rules_heatmap")
    if noise_floor(results, os.path.join(out, "ort_noise.md")):
        written.append("ort_noise.md")
    if args.compare:
        compare(plt, [item.split("=", 1) for item in args.compare], os.path.join(out, "transfer"))
        written.append("transfer")
    print("wrote " + ", ".join(os.path.join(out, w) + ("" if w.endswith(".md") else ".png/.svg") for w in written))


if __name__ == "__main__":
    main()
