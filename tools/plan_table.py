"""The research benchmark's table (tools/plan_bench.sh): cost before / after of taso, eqsat
and each agent with each plan, mean and standard deviation over the seeds, and seconds.

    python3 tools/plan_table.py REPORTS_DIR GRAPH...
"""
import json
import statistics
import sys
from pathlib import Path

AGENTS = ("mf", "mb")
PLANS = ("none", "mcts", "eqsat")


def ratio(report):
    return report["cost_before_ms"] / report["cost_after_ms"]


def main(argv):
    reports = Path(argv[1])
    graphs = argv[2:]
    load = lambda p: json.loads(p.read_text())
    header = ["graph", "taso", "eqsat"] + [f"{a} {p}" for a in AGENTS for p in PLANS]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for g in graphs:
        searches = {s: load(reports / f"{g}_{s}.json") for s in ("taso", "eqsat")}
        best = max(ratio(r) for r in searches.values())
        cells = [g] + [f"{ratio(r):.4f} ({r['seconds']:.1f} s)" for r in searches.values()]
        for agent in AGENTS:
            for plan in PLANS:
                runs = [load(p) for p in sorted(reports.glob(f"{g}_{agent}_s*_{plan}.json"))]
                if not runs:
                    cells.append("-")
                    continue
                values = [ratio(r) for r in runs]
                mean = statistics.mean(values)
                spread = statistics.pstdev(values) if len(values) > 1 else 0.0
                seconds = statistics.mean(r["seconds"] for r in runs)
                mark = "**" if mean > best * (1 + 1e-9) else ""
                cells.append(f"{mark}{mean:.4f} ± {spread:.4f}{mark} ({seconds:.1f} s)")
        print("| " + " | ".join(cells) + " |")
    print(f"\nMean ± standard deviation over the seeds; bold: above the better of taso and eqsat. "
          f"Seconds: the search's own (the report's `seconds`).")


if __name__ == "__main__":
    main(sys.argv)
