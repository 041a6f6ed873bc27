"""The research benchmark's table (tools/plan_bench.sh): cost before / after of taso, eqsat
and each agent with each plan, mean and standard deviation over the seeds, and seconds.
Agents: the per-graph mf and mb, and where the transfer protocol ran, the transfer agent
zero-shot ("transfer") and fine-tuned on the graph ("tuned"); columns without a report
are left out.

    python3 tools/plan_table.py REPORTS_DIR GRAPH... [--figure PATH]

With --figure (matplotlib), draws PATH.png and PATH.svg: per graph and plan, the zero-shot,
fine-tuned and per-graph agents' cost ratios over the better of taso's and eqsat's, one dot
per seed, with the 2% band the transfer goal allows around the per-graph agent's mean.
"""
import argparse
import json
import statistics
from pathlib import Path
import figures

AGENTS = ("mf", "mb", "transfer", "tuned")
PLANS = ("none", "mcts", "eqsat", "grow")
# The transfer figure's series: (agent in the reports, label).
TRANSFER_SERIES = (("transfer", "zero-shot"), ("tuned", "fine-tuned"), ("mf", "per-graph"))
# The figure's lowest ratio; a dot below it is drawn there, with its value written.
FIGURE_FLOOR = 0.85


def ratio(report):
    return report["cost_before_ms"] / report["cost_after_ms"]


def load(path):
    return json.loads(path.read_text())


def runs(reports, graph, agent, plan):
    return [load(p) for p in sorted(reports.glob(f"{graph}_{agent}_s*_{plan}.json"))]


def best_search(reports, graph):
    return max(ratio(load(reports / f"{graph}_{s}.json")) for s in ("taso", "eqsat"))


def table(reports, graphs):
    columns = [(a, p) for a in AGENTS for p in PLANS if any(reports.glob(f"*_{a}_s*_{p}.json"))]
    header = ["graph", "taso", "eqsat"] + [f"{a} {p}" for a, p in columns]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for g in graphs:
        searches = [load(reports / f"{g}_{s}.json") for s in ("taso", "eqsat")]
        best = best_search(reports, g)
        cells = [g] + [f"{ratio(r):.4f} ({r['seconds']:.1f} s)" for r in searches]
        for agent, plan in columns:
            found = runs(reports, g, agent, plan)
            if not found:
                cells.append("-")
                continue
            values = [ratio(r) for r in found]
            mean = statistics.mean(values)
            spread = statistics.pstdev(values) if len(values) > 1 else 0.0
            seconds = statistics.mean(r["seconds"] for r in found)
            mark = "**" if mean > best * (1 + 1e-9) else ""
            cells.append(f"{mark}{mean:.4f} ± {spread:.4f}{mark} ({seconds:.1f} s)")
        print("| " + " | ".join(cells) + " |")
    print("\nMean ± standard deviation over the seeds; bold: above the better of taso and eqsat. "
          "Seconds: the search's own (the report's `seconds`).")


def transfer_figure(reports, graphs, path, plans=("none", "eqsat")):
    plt = figures.pyplot()
    fig, axes = plt.subplots(1, len(plans), figsize=(5.2 * len(plans), 4), sharey=True, squeeze=False)
    for ax, plan in zip(axes[0], plans):
        ax.axhline(1, color="0.4", linewidth=0.8)
        for i, g in enumerate(graphs):
            best = best_search(reports, g)
            own = [ratio(r) / best for r in runs(reports, g, "mf", plan)]
            if own:
                mean = statistics.mean(own)
                ax.fill_between([i - 0.35, i + 0.35], mean * 0.98, mean, color="0.85", linewidth=0,
                                label="within 2% of the per-graph agent" if i == 0 else None)
            for j, (agent, label) in enumerate(TRANSFER_SERIES):
                ys = [ratio(r) / best for r in runs(reports, g, agent, plan)]
                x = i - 0.2 + 0.2 * j
                ax.scatter([x] * len(ys), [max(y, FIGURE_FLOOR) for y in ys], color=f"C{j}", s=16,
                           marker="o", label=label if i == 0 else None)
                low = [y for y in ys if y < FIGURE_FLOOR]
                if low:  # drawn at the floor, with the value written beside it
                    ax.annotate(f"{statistics.mean(low):.2f}", (x, FIGURE_FLOOR), textcoords="offset points",
                                xytext=(4, 4), fontsize=7, color=f"C{j}")
        ax.set_xticks(range(len(graphs)))
        ax.set_xticklabels(graphs, rotation=30, ha="right")
        ax.set_title(f"--plan {plan}", fontsize=10)
        ax.set_ylim(FIGURE_FLOOR - 0.01, max(1.05, ax.get_ylim()[1]))
    axes[0][0].set_ylabel("cost ratio / the better of taso and eqsat")
    axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.suptitle("Transfer under h100 prices: one agent on graphs it never saw, against agents trained on each", fontsize=10)
    figures.save(fig, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", type=Path)
    ap.add_argument("graphs", nargs="+")
    ap.add_argument("--figure", help="draw the transfer figure into PATH.png and PATH.svg")
    args = ap.parse_args()
    table(args.reports, args.graphs)
    if args.figure:
        transfer_figure(args.reports, args.graphs, args.figure)


if __name__ == "__main__":
    main()
