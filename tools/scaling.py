#!/usr/bin/env python3
"""Seconds and peak memory against graph size, for docs/scaling.md.

Runs the built `rlflow` on the scale family's small transformer encoder
(`zoo:encoder_small:DEPTH`, about 53 nodes a layer) at several depths: ONNX import (the
model written by `rlflow convert`, read back by `rlflow info`), then `rlflow optimize`
with each search (analytic cost, no ORT guard, so that the search and the verification
are what is timed). Each run is timed by /usr/bin/time (wall seconds, max RSS); a method
that exceeds --timeout at one size is not run at larger ones. Then the learning agents'
costs at the same depths, from the built RL benchmark (bench/rl_bench.cpp's scale_*
benchmarks: an environment step, a policy forward pass, the world model's encoder, a PPO
update). Writes Markdown
tables, and a log-log figure when matplotlib is installed.

    python3 tools/scaling.py --rlflow build/tools/rlflow --bench build/bench/rlflow_rl_bench --out docs/scaling.md
"""

import argparse
import json
import os
import subprocess
import tempfile

NODES_PER_LAYER = 53  # encoder_small: zoo.hpp
FINDINGS = "## Findings"  # a section of the output the script keeps when it rewrites the table


def timed(command, timeout):
    """(wall seconds, peak MB, exit code) of `command` under /usr/bin/time."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        try:
            code = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", t.name] + command, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            return None, None, "timeout"
        seconds, kilobytes = t.read().split()[-2:]
        return float(seconds), int(kilobytes) / 1024, code


def measure(rlflow, depth, methods, timeout, work, skipped):
    """One row: nodes, then (seconds, MB, note) per measured thing."""
    model = f"zoo:encoder_small:{depth}"
    info = json.loads(subprocess.run([rlflow, "info", model, "--json"], capture_output=True, check=True).stdout)
    row = {"depth": depth, "nodes": info["nodes"]}
    onnx = os.path.join(work, "model.onnx")
    subprocess.run([rlflow, "convert", model, onnx], capture_output=True, check=True)
    seconds, mb, code = timed([rlflow, "info", onnx], timeout)
    row["import"] = (seconds, mb, "" if code == 0 else str(code))
    for method in methods:
        if method in skipped:
            row[method] = (None, None, "skipped")
            continue
        report = os.path.join(work, "report.json")
        seconds, mb, code = timed([rlflow, "optimize", model, "-o", os.path.join(work, "out.onnx"), "--search", method,
                                   "--cost", "analytic", "--guard", "none", "--report", report], timeout)
        note = ""
        if code == "timeout":
            skipped.add(method)
            note = f"over {timeout} s"
        elif code != 0:
            note = f"exit {code}"
        else:
            with open(report) as f:
                r = json.load(f)
            note = f"{r['stop_reason']}, {r['expansions']} expansions, {r['cost_before_ms'] / r['cost_after_ms']:.3f}x"
            if r.get("peak_search_bytes"):
                note += f", search {r['peak_search_bytes'] / 2**20:.1f} MB"
        row[method] = (seconds, mb, note)
    return row


STEPS = [("env_step", "environment step", 1e-3), ("policy_act", "policy forward pass", 1e-3),
         ("wm_encode", "world model's encoder", 1e-3), ("ppo_update", "PPO update (64 samples, 4 epochs)", 1.0)]


def measure_steps(bench, depths, min_time, repetitions):
    """{depth: {benchmark: seconds per iteration}} from the RL benchmark's scale_* runs: the
    median of `repetitions` runs, run in random interleaved order, so that a machine whose
    speed drifts during the run (a shared host) shifts every size alike rather than the
    sizes run last."""
    out = {}
    if not bench or not os.path.exists(bench):
        return out
    names = "|".join(name for name, _, _ in STEPS)
    wanted = "|".join(str(d) for d in depths)
    run = subprocess.run([bench, f"--benchmark_filter=^scale_({names})/encoder_small:({wanted})(/real_time)?$", "--benchmark_format=json",
                          f"--benchmark_min_time={min_time}", f"--benchmark_repetitions={repetitions}",
                          "--benchmark_enable_random_interleaving=true", "--benchmark_report_aggregates_only=true"],
                         capture_output=True, text=True, check=True)
    units = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    for b in json.loads(run.stdout)["benchmarks"]:
        if b.get("aggregate_name", "median") != "median":
            continue
        name = b["run_name"]  # without the aggregate's suffix
        kind, model = name.split("/")[0][len("scale_"):], name.split("/")[1]
        depth = int(model.split(":")[1])
        out.setdefault(depth, {})[kind] = b["real_time"] * units[b["time_unit"]]
    return out


def steps_table(rows, steps):
    """The RL benchmark's table: per depth, each step's time and its ratio to the smallest graph's."""
    if not steps:
        return []
    lines = ["", "The learning agents' costs at the same depths (`" + "`, `".join(f"scale_{n}" for n, _, _ in STEPS)
             + "` in bench/rl_bench.cpp; float Eigen backend, one thread; the median of interleaved runs), each with its ratio to the"
             " first row:", "",
             "| depth | nodes | " + " | ".join(label for _, label, _ in STEPS) + " |", "|---:|---:|" + "---:|" * len(STEPS)]
    first = {}
    for row in rows:
        measured = steps.get(row["depth"], {})
        cells = []
        for name, _, unit in STEPS:
            if name not in measured:
                cells.append("not run")
                continue
            first.setdefault(name, measured[name])
            value = measured[name] / unit
            cells.append(f"{value:.3g} {'ms' if unit < 1 else 's'} ({measured[name] / first[name]:.1f}x)")
        lines.append(f"| {row['depth']} | {row['nodes']:,} | " + " | ".join(cells) + " |")
    return lines


def cell(value):
    seconds, mb, note = value
    if seconds is None:
        return note
    return f"{seconds:.2f} s, {mb:.0f} MB" + (f" ({note})" if note else "")


def write_table(rows, methods, out, figure, steps):
    columns = ["import"] + methods
    lines = ["# Scaling: seconds and peak memory against graph size", "",
             "Written by `python3 tools/scaling.py` (see its docstring): the built `rlflow` on",
             "`zoo:encoder_small:DEPTH`; `optimize` with `--cost analytic --guard none` and its default",
             "budget (1000 expansions, or one per 8 nodes on larger graphs); wall seconds and max RSS of",
             "the whole command (model build, search, verification on random inputs, writing), and for",
             "the searches that count it, the memory the search held beyond its working graph.", "",
             "| depth | nodes | " + " | ".join(columns) + " |", "|---:|---:|" + "---|" * len(columns)]
    for row in rows:
        lines.append(f"| {row['depth']} | {row['nodes']:,} | " + " | ".join(cell(row[c]) for c in columns) + " |")
    lines += steps_table(rows, steps)
    if figure:
        lines += ["", f"![seconds and peak memory against nodes]({os.path.basename(figure)})"]
    kept = ""  # what people wrote under "## Findings" stays
    if os.path.exists(out):
        with open(out) as f:
            previous = f.read()
        if FINDINGS in previous:
            kept = "\n" + previous[previous.index(FINDINGS):]
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n" + kept)


def plot(rows, methods, figure, steps):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(1, 3 if steps else 2, figsize=(15 if steps else 10, 4))
    for index, (ax, label) in enumerate(zip(axes, ["seconds (whole command)", "peak MB (max RSS)"])):
        for column in ["import"] + methods:
            points = [(r["nodes"], r[column][index]) for r in rows if r[column][index] is not None]
            if points:
                ax.plot(*zip(*points), marker="o", label=column)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("nodes")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend()
    if steps:
        ax = axes[2]
        for name, label, _ in STEPS:
            points = [(r["nodes"], steps[r["depth"]][name]) for r in rows if name in steps.get(r["depth"], {})]
            if points:
                ax.plot(*zip(*points), marker="o", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("nodes")
        ax.set_ylabel("seconds per step")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(figure, dpi=120)
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rlflow", default="build/tools/rlflow")
    parser.add_argument("--nodes", default="1000,3000,10000,30000,100000", help="target node counts, comma-separated")
    parser.add_argument("--methods", default="greedy,taso,eqsat")
    parser.add_argument("--timeout", type=float, default=600, help="seconds a run may take")
    parser.add_argument("--bench", default="build/bench/rlflow_rl_bench",
                        help="the built RL benchmark (its scale_* runs; skipped when the file is missing)")
    parser.add_argument("--bench-min-time", type=float, default=1.0, help="Google Benchmark's minimum seconds per benchmark run")
    parser.add_argument("--bench-repetitions", type=int, default=5, help="runs of each benchmark, interleaved; the table gives their median")
    parser.add_argument("--out", default="docs/scaling.md")
    args = parser.parse_args()
    methods = args.methods.split(",")
    depths = [max(1, round(int(n) / NODES_PER_LAYER)) for n in args.nodes.split(",")]
    rows, skipped = [], set()
    with tempfile.TemporaryDirectory() as work:
        for depth in depths:
            rows.append(measure(args.rlflow, depth, methods, args.timeout, work, skipped))
            print(rows[-1], flush=True)
    steps = measure_steps(args.bench, depths, args.bench_min_time, args.bench_repetitions)
    figure = os.path.splitext(args.out)[0] + ".png"
    write_table(rows, methods, args.out, figure if plot(rows, methods, figure, steps) else None, steps)


if __name__ == "__main__":
    main()
