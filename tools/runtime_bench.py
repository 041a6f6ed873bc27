#!/usr/bin/python3
"""The real-runtime benchmark: agents trained on measured latency against the best guarded search.

    /usr/bin/python3 tools/runtime_bench.py --work DIR [--build BUILD] [--seeds 1 2 3]
        [--agents mb mf] [--real-steps N] [--time-limit S] [--runs N] [--figure PATH] MODEL...

MODEL is zoo:NAME, an .onnx file with its weights, or a weight-free export (tests/data;
given seeded random weights with `rlflow weights ... --data-inputs input`). Everything runs
at the default target: ONNX Runtime at level all with a thread per physical core.

For every model:
  1. `rlflow optimize MODEL --search greedy|taso|eqsat` with the default guard (which
     times each search's candidates from every price model against the input and writes
     one only if it is faster). The best guarded search is the one whose written model
     the guard measured fastest (the input itself when none wrote anything else).
  2. For every seed and agent: `rlflow train --agent A --graph MODEL --reward ort-latency`
     (at most --time-limit seconds; mb: --real-steps real steps), then `rlflow optimize
     MODEL --search A --agent DIR` with the default guard: the agent's rollouts end at its
     NO-OP, and where they ended is timed first (--agent-stop auto).
  3. tools/ort/compare.js, at the target: the best search's model against itself (the
     noise floor), then the agent's model against the best search's in two separate
     comparisons of --runs interleaved rounds (fresh sessions each), and each against the
     input once.

Every step's output is kept in DIR, and a step whose output exists is not run again, so a
run that was stopped resumes. Writes DIR/runtime_bench.json (a row per model, seed and
agent) and prints a table: ratios are the agent's time over the best search's (below 1:
the agent's model is faster). With --figure, draws PATH.png and PATH.svg from every row
in DIR (no MODEL needed to redraw). Slow (minutes per model): kept out of the unit tests.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools"))
from ort_speedups import ort_ratio  # noqa: E402
import figures  # noqa: E402

SEARCHES = ["greedy", "taso", "eqsat"]


def run(command, log):
    """Runs `command`, its output appended to `log`; returns the seconds it took."""
    print("+", " ".join(command), file=sys.stderr, flush=True)
    start = time.monotonic()
    with open(log, "a") as out:
        subprocess.run(command, check=True, stdout=out, stderr=subprocess.STDOUT, text=True)
    return time.monotonic() - start


def write_json(path, value):
    folder = os.path.dirname(path) or "."
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as out:
        json.dump(value, out, indent=1)
    os.replace(out.name, path)


def input_model(rlflow, model, work):
    """An .onnx file with weights for `model`."""
    if model.startswith("zoo:"):
        path = os.path.join(work, model[4:] + ".onnx")
        if not os.path.exists(path):
            run([rlflow, "convert", model, path], os.path.join(work, "convert.log"))
        return path
    path = os.path.join(work, os.path.basename(model))
    if not os.path.exists(path):
        if os.path.getsize(model) > 1 << 20:  # a weight-free export is a few hundred KB
            os.symlink(os.path.abspath(model), path)
        else:
            run([rlflow, "weights", model, path, "--data-inputs", "input"], os.path.join(work, "convert.log"))
    return path


def guarded_ratio(report):
    """The written model's time over the input's as the guard measured it at the target (1 for the input)."""
    if report["written"] == "input":
        return 1.0
    return report["ort_after_ms"] / report["ort_before_ms"]


def optimize(rlflow, model, stem, extra, log):
    out, report_path = stem + ".onnx", stem + ".report.json"
    if not os.path.exists(report_path):
        run([rlflow, "optimize", model, "-o", out, "--report", report_path] + extra, log)
    with open(report_path) as f:
        report = json.load(f)
    return out, report


def figure(rows, path):
    """Per model: the agent's model against the best search's (each comparison a dot, one per
    seed and comparison), beside the best search's against the input, with the noise floor
    (the best search's model against itself) drawn as a band around 1."""
    plt = figures.pyplot()
    models = list(dict.fromkeys(r["model"] for r in rows))
    agents = list(dict.fromkeys(r["agent"] for r in rows))
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(models) + 2), 4.2))
    noise = max((abs(r["noise"] - 1) for r in rows), default=0)
    ax.axhspan(1 - noise, 1 + noise, color="0.88", label=f"noise floor (largest self-ratio, ±{100 * noise:.1f}%)")
    ax.axhline(1, color="0.4", linewidth=0.8)
    ax.axhline(0.97, color="tab:red", linewidth=0.8, linestyle=":", label="3% faster than the best search")
    for i, model in enumerate(models):
        rs = [r for r in rows if r["model"] == model]
        ax.scatter([i - 0.15] * len(rs), [r["search_vs_input"] for r in rs], marker="s", color="0.5",
                   label="best guarded search / input" if i == 0 else None)
        for j, agent in enumerate(agents):
            ys = [v for r in rs if r["agent"] == agent for v in r["agent_vs_search"]]
            ax.scatter([i + 0.1 + 0.1 * j] * len(ys), ys, color=f"C{j}", label=f"{agent} / best search" if i == 0 else None)
    ax.set_xticks(range(len(models)))
    # Exports are named by their file (NAME_opN); zoo graphs by their name alone.
    ax.set_xticklabels([m if "_op" in m else "zoo:" + m for m in models], rotation=30, ha="right")
    ax.set_ylabel("time ratio, ORT level all (below 1: faster)")
    ax.set_title("Agents trained on measured latency, against the best guarded search", fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    figures.save(fig, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*")
    ap.add_argument("--work", required=True)
    ap.add_argument("--build", default=os.path.join(SOURCE_DIR, "build"))
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--agents", nargs="+", default=["mb"], choices=["mf", "mb"])
    ap.add_argument("--real-steps", type=int, default=400, help="mb: real environment steps")
    ap.add_argument("--time-limit", type=float, default=600, help="seconds of training at most")
    ap.add_argument("--runs", type=int, default=30, help="interleaved rounds of each comparison")
    ap.add_argument("--figure", help="draw the rows into PATH.png and PATH.svg")
    args = ap.parse_args()
    rlflow = os.path.join(args.build, "tools", "rlflow")
    os.makedirs(args.work, exist_ok=True)
    rows_path = os.path.join(args.work, "runtime_bench.json")
    rows = json.load(open(rows_path)) if os.path.exists(rows_path) else []
    done = {(r["model"], r["seed"], r["agent"]) for r in rows}
    for model in args.models:
        name = model[4:] if model.startswith("zoo:") else os.path.basename(model).removesuffix(".onnx")
        folder = os.path.join(args.work, name)
        os.makedirs(folder, exist_ok=True)
        log = os.path.join(folder, "log.txt")
        source = input_model(rlflow, model, folder)
        searches = {}
        for s in SEARCHES:
            out, report = optimize(rlflow, source, os.path.join(folder, s), ["--search", s], log)
            searches[s] = {"file": out if report["written"] != "input" else source, "guard_ratio": guarded_ratio(report),
                           "seconds": report["seconds"], "written": report["written"], "rewrites": report["rewrites"]}
        best = min(SEARCHES, key=lambda s: searches[s]["guard_ratio"])  # the first of equals: greedy when all wrote the input
        best_file = searches[best]["file"]
        for seed in args.seeds:
            for agent in args.agents:
                if (name, seed, agent) in done:
                    continue
                stem = os.path.join(folder, f"{agent}_s{seed}")
                if not os.path.exists(os.path.join(stem, "agent.json")):
                    train = [rlflow, "train", "--agent", agent, "--graph", source, "--checkpoint", stem, "--seed", str(seed),
                             "--reward", "ort-latency", "--time-limit", str(args.time_limit)]
                    if agent == "mb":
                        train += ["--real-steps", str(args.real_steps)]
                    run(train, log)
                with open(os.path.join(stem, "agent.json")) as f:
                    train_seconds = json.load(f)["seconds"]
                out, report = optimize(rlflow, source, stem + ".opt", ["--search", agent, "--agent", stem], log)
                agent_file = out if report["written"] != "input" else source
                noise, _ = ort_ratio(best_file, best_file, "all", 0, args.runs)
                first, diff = ort_ratio(best_file, agent_file, "all", 0, args.runs)
                second, _ = ort_ratio(best_file, agent_file, "all", 0, args.runs)
                search_vs_input, _ = ort_ratio(source, best_file, "all", 0, args.runs)
                agent_vs_input, _ = ort_ratio(source, agent_file, "all", 0, args.runs)
                row = {"model": name, "seed": seed, "agent": agent,
                       "best_search": best if searches[best]["written"] != "input" else "input", "searches": searches,
                       "train_seconds": train_seconds, "agent_written": report["written"], "agent_rewrites": report["rewrites"],
                       "agent_guard_ratio": guarded_ratio(report), "noise": noise, "agent_vs_search": [first, second],
                       "max_rel_diff": diff, "search_vs_input": search_vs_input, "agent_vs_input": agent_vs_input}
                rows.append(row)
                write_json(rows_path, rows)
                print(json.dumps({k: row[k] for k in ("model", "seed", "agent", "best_search", "noise", "agent_vs_search",
                                                      "search_vs_input", "agent_vs_input", "train_seconds")}), flush=True)
    if args.figure:
        figure(rows, args.figure)
    print("| model | agent | seeds | best search (guard) | search / input | agent / input | agent / search (1st, 2nd) | noise |")
    print("|---|---|---|---|---|---|---|---|")
    for model in dict.fromkeys(r["model"] for r in rows):
        for agent in dict.fromkeys(r["agent"] for r in rows):
            rs = [r for r in rows if r["model"] == model and r["agent"] == agent]
            if not rs:
                continue
            mean = lambda key: statistics.mean(r[key] for r in rs)  # noqa: E731
            pairs = "; ".join(f"{r['agent_vs_search'][0]:.3f}, {r['agent_vs_search'][1]:.3f}" for r in rs)
            best = rs[0]["best_search"]
            guard = f" ({rs[0]['searches'][best]['guard_ratio']:.3f})" if best in rs[0]["searches"] else ""
            print(f"| {model} | {agent} | {len(rs)} | {best}{guard} "
                  f"| {mean('search_vs_input'):.3f} | {mean('agent_vs_input'):.3f} | {pairs} | {mean('noise'):.3f} |")


if __name__ == "__main__":
    main()
