#!/usr/bin/env python3
"""Figures of an `rlflow eval` run: what its results.json holds, drawn.

    tools/eval_figures.py EVAL_DIR [--out FOLDER]

Writes PNG and SVG files into FOLDER (default: EVAL_DIR/figures):
- speedup_cost: bars of the cost model's speed-up (cost before / after) per graph and
  method, the mean over seeds. Each bar starts at 1 (no change) and goes up or down to its
  value; error bars (one standard deviation over seeds) only on bars of several seeds. The
  y-axis spans at least 1 ± 2%, so that a tiny difference never looks large;
- speedup_ort_LEVEL_tTHREADS: the same for ONNX Runtime's measured speed-up, one figure per
  level and thread count eval timed at (--ort, --ort-level). A grey band around 1 is ONNX
  Runtime's noise floor at that timing: the largest |speed-up - 1| of the cells whose written
  model is their input unchanged (no rewrites applied), else ±2% when there are none; the
  legend says which. The y-axis spans the band and at least 1 ± 2%. A bar whose cells all
  have "within_noise" (the sign test on the paired runs cannot tell the output from its
  input) is drawn pale and hatched, so noise does not look like a gain; results.json files
  from before that field are drawn without;
- rules_heatmap: how often each rule was applied (in the written graphs, summed over seeds)
  on each graph, one panel per method side by side, sharing the rule rows and one colour
  scale; rules never applied are left out. Rows are labelled by results.json's
  "rule_labels" (a readable pattern such as "Conv+Relu → Conv"; the rule's name follows
  in parentheses when labels collide), else by the rule's name.

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
Needs matplotlib (Debian: python3-matplotlib; `bash tools/setup.sh` installs it): without it,
the script says so in one line and exits with status 2."""
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


def ok_cells(results, graph, method):
    return [c for c in results["cells"] if c["graph"] == graph and c["method"] == method and c["status"] == "ok"]


def table(results, path):
    """{graph: {method: (mean, spread, values)}} over the ok cells that have the figure at `path`."""
    out = {}
    for g in results["graphs"]:
        for m in results["methods"]:
            xs = [at(c, path) for c in ok_cells(results, g, m)]
            xs = [x for x in xs if x is not None]
            if xs:
                out.setdefault(g, {})[m] = mean_spread(xs) + (len(xs),)
    return out


def all_within_noise(results, graph, method, key):
    """Whether every ok cell of (graph, method) timed at `key` says its ORT speed-up is within
    noise (the sign test on the paired runs cannot tell output from input). False when any
    lacks the field (results.json written before it existed) or says otherwise."""
    flags = [at(c, f"ort/{key}/within_noise") for c in ok_cells(results, graph, method)
             if at(c, f"ort/{key}/speedup") is not None]
    return bool(flags) and all(f is True for f in flags)


def unchanged_speedups(results, key):
    """ORT's speed-ups at `key` of the ok cells whose written model is their input unchanged
    (no rewrites applied): exactly 1 if timing had no noise."""
    return sorted(c["ort"][key]["speedup"] for c in results["cells"]
                  if c["status"] == "ok" and not c.get("rewrites") and key in c.get("ort", {})
                  and "speedup" in c["ort"][key])


DEFAULT_NOISE = 0.02  # the band when no cell was written unchanged


def noise_band(results, key):
    """(half-width, legend, caption) of ONNX Runtime's noise floor at `key`: the largest
    |speed-up - 1| of the cells written unchanged, else the default."""
    xs = unchanged_speedups(results, key)
    if xs:
        half = max(abs(x - 1) for x in xs)
        return (half, f"ORT noise floor, ±{100 * half:.2g}%",
                f"grey band: ONNX Runtime's noise floor, the largest |speed-up − 1| of the {len(xs)} cell(s) written unchanged")
    return (DEFAULT_NOISE, f"ORT noise floor, ±{100 * DEFAULT_NOISE:.0f}% (default)",
            f"grey band: ONNX Runtime's noise floor, a default ±{100 * DEFAULT_NOISE:.0f}% (no cell was written unchanged)")


def short(graph):
    return graph[4:] if graph.startswith("zoo:") else os.path.splitext(os.path.basename(graph))[0]


def bars(plt, results, key, ylabel, path, min_half=0.02, ort_key=None):
    """Bars from 1 (no change) up or down to each method's mean ratio per graph; error bars (one
    standard deviation over seeds) only on bars of several seeds. The y-axis spans at least
    1 ± min_half, so that a tiny difference does not look large. With `ort_key`, ONNX Runtime's
    noise floor is a grey band around 1 (the axis spans it too), and a bar whose cells are all
    within noise is drawn pale and hatched."""
    from matplotlib.colors import to_rgba
    from matplotlib.patches import Patch
    data = table(results, key)
    if not data:
        return False
    graphs = [g for g in results["graphs"] if g in data]
    methods = [m for m in results["methods"] if any(m in data[g] for g in graphs)]
    width = 0.8 / len(methods)
    fig, ax = plt.subplots(figsize=(min(18, max(7, 0.16 * len(graphs) * len(methods) + 2)), 4.8))
    handles = []
    lo, hi = 1 - min_half, 1 + min_half
    band = None
    if ort_key is not None:
        band = noise_band(results, ort_key)
        ax.axhspan(1 - band[0], 1 + band[0], color="0.6", alpha=0.3, linewidth=0, zorder=0)
        lo, hi = min(lo, 1 - 1.25 * band[0]), max(hi, 1 + 1.25 * band[0])
    any_pale = any_error = False
    for k, m in enumerate(methods):
        color = f"C{k}"
        handles.append(Patch(facecolor=color, label=m))
        for i, g in enumerate(graphs):
            if m not in data[g]:
                continue
            mean, spread, n = data[g][m]
            x = i + (k - (len(methods) - 1) / 2) * width
            pale = ort_key is not None and all_within_noise(results, g, m, ort_key)
            any_pale |= pale
            ax.bar(x, mean - 1, width, bottom=1, zorder=2, color=to_rgba(color, 0.3) if pale else color,
                   edgecolor=color, linewidth=0.6 if pale else 0, hatch="////" if pale else None)
            if n > 1 and spread > 0:
                any_error = True
                ax.errorbar(x, mean, yerr=spread, fmt="none", ecolor="black", elinewidth=0.8, capsize=1.5, zorder=3)
            else:
                spread = 0
            lo, hi = min(lo, mean - spread), max(hi, mean + spread)
    ax.axhline(1.0, color="gray", linewidth=0.8, zorder=1)
    pad = 0.06 * (hi - lo)
    ax.set_ylim(lo - pad, hi + pad)
    if band is not None:
        handles.append(Patch(facecolor="0.6", alpha=0.3, label=band[1]))
    if any_pale:
        handles.append(Patch(facecolor="white", edgecolor="0.3", hatch="////", label="within noise"))
    ax.set_xticks(range(len(graphs)))
    ax.set_xticklabels([short(g) for g in graphs], rotation=35, ha="right", fontsize=8)
    ax.set_ylabel(ylabel, fontsize=9)
    caption = ["bars from 1 (no change) to the mean over seeds"
               + ("; error bars: one standard deviation over seeds" if any_error else "")]
    if band is not None:
        caption.append(band[2])
    if any_pale:
        caption.append("hatched: every cell within noise (a sign test on the paired runs cannot tell output from input)")
    ax.set_title("\n".join(caption), fontsize=7.5)
    ax.legend(handles=handles, fontsize=7, ncol=2 if len(handles) > 3 else 1)
    figures.save(fig, path)
    return True


def rule_names(results, rules):
    """Row labels of `rules`: results.json's "rule_labels" (readable patterns such as
    "Conv+Relu → Conv") where it has one, else the rule's name; a label shared by several
    rules gets the name appended in parentheses."""
    labels = results.get("rule_labels") or {}
    names = [labels.get(r) or r for r in rules]
    return [f"{n} ({r})" if names.count(n) > 1 and n != r else n for n, r in zip(names, rules)]


def heatmap(plt, results, path):
    """Per method, one panel side by side (the rule rows shared): how often each rule was
    applied in the written graphs, summed over seeds, on each graph."""
    counts = {}  # method -> rule -> graph -> applications
    for c in results["cells"]:
        if c["status"] != "ok":
            continue
        per_rule = counts.setdefault(c["method"], {})
        for rule, n in c.get("rewrites", {}).items():
            per_rule.setdefault(rule, {}).setdefault(c["graph"], 0)
            per_rule[rule][c["graph"]] += n
    totals = {}
    for per_rule in counts.values():
        for rule, per_graph in per_rule.items():
            totals[rule] = totals.get(rule, 0) + sum(per_graph.values())
    rules = sorted((r for r in totals if totals[r]), key=lambda r: (-totals[r], r))
    if not rules:
        return False
    methods = [m for m in results["methods"] if m in counts] + sorted(m for m in counts if m not in results["methods"])
    graphs = results["graphs"]
    grids = [[[counts[m].get(r, {}).get(g, 0) for g in graphs] for r in rules] for m in methods]
    top = max(n for grid in grids for row in grid for n in row)
    labels = rule_names(results, rules)
    panel = max(2.2, 0.7 * len(graphs) + 0.6)
    label_room = min(4.5, 0.8 + 0.055 * max(len(s) for s in labels))
    fig = plt.figure(figsize=(min(24, label_room + panel * len(methods) + 1.2), max(3, 1.8 + 0.3 * len(rules))))
    layout = fig.add_gridspec(1, len(methods) + 1, width_ratios=[1] * len(methods) + [0.06])
    axes = []
    for k, (m, grid) in enumerate(zip(methods, grids)):
        ax = fig.add_subplot(layout[0, k], sharey=axes[0] if axes else None)
        axes.append(ax)
        image = ax.imshow(grid, aspect="auto", cmap="viridis", vmin=0, vmax=top)
        for i, row in enumerate(grid):
            for j, n in enumerate(row):
                if n:
                    ax.text(j, i, str(n), ha="center", va="center", fontsize=7, color="white" if n < top / 2 else "black")
        ax.set_xticks(range(len(graphs)))
        ax.set_xticklabels([short(g) for g in graphs], rotation=30, ha="right", fontsize=8)
        ax.set_title(m, fontsize=9)
        if k == 0:
            ax.set_yticks(range(len(rules)))
            ax.set_yticklabels(labels, fontsize=7)
        else:
            ax.tick_params(labelleft=False)
    fig.colorbar(image, cax=fig.add_subplot(layout[0, len(methods)]), label="applications")
    fig.suptitle("rule applications in the written graphs, per method (summed over seeds)", fontsize=9)
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
        xs = unchanged_speedups(results, key)
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
                os.path.join(out, f"speedup_ort_{key}"), ort_key=key):
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
