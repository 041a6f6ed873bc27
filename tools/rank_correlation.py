#!/usr/bin/python3
"""Does the CPU profiler rank graphs as ONNX Runtime's real CPU latency does?

    /usr/bin/python3 tools/rank_correlation.py [--build BUILD_DIR] [--work DIR]
        [--runs N] [--warmup W] [--keep] [-- OPTIONS OF rlflow_profile_variants...]

1. BUILD_DIR/tools/rlflow_profile_variants writes graph variants as ONNX (the zoo at
   batch 1 and 2, plus greedy-rewritten ones) and prices each with CostModel<CpuProfiler>
   and the analytic `cpu` preset.
2. tools/ort/compare.js times each variant in ONNX Runtime on the CPU, single-threaded
   (--threads 1) with graph optimisations disabled, so ORT runs the graph as written:
   W untimed runs, then the median of N timed ones.
3. Prints the table (variant, profiler ms, analytic ms, ORT ms) and Spearman's rank
   correlation of each backend's prices with ORT's latencies, and writes the table to
   WORK/rank_correlation.tsv.

Example: /usr/bin/python3 tools/rank_correlation.py --build build   (34 variants)
(add --flush-mib 64 after the -- to time ops with cold caches).

Steps 1 and 2 run one after the other, never together, so neither measurement shares
the CPU with the other. Each ONNX file is deleted once timed unless --keep. Slow (minutes):
kept out of the unit tests. Needs node and tools/ort/node_modules (bash tools/setup.sh
--test) and a build with RLFLOW_BUILD_TOOLS.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPARE_JS = os.path.join(SOURCE_DIR, "tools", "ort", "compare.js")
# Spearman's rho is reported over at least this many variants.
MIN_VARIANTS = 20


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(SOURCE_DIR, "build"), help="the CMake build folder")
    parser.add_argument("--work", help="folder for the ONNX files and the table (default BUILD/rank_correlation)")
    parser.add_argument("--runs", type=int, default=10, help="timed ORT runs per variant")
    parser.add_argument("--warmup", type=int, default=3, help="untimed ORT runs per variant")
    parser.add_argument("--keep", action="store_true", help="keep the ONNX files")
    parser.add_argument("variant_options", nargs="*", help="passed to rlflow_profile_variants (after --)")
    return parser.parse_args()


def profile_variants(args, work):
    """Runs rlflow_profile_variants; returns [(name, file, profiler_ms, analytic_ms)]."""
    tool = os.path.join(args.build, "tools", "rlflow_profile_variants")
    if not os.access(tool, os.X_OK):
        sys.exit(f"rank_correlation: {tool} is missing; build the target rlflow_profile_variants")
    command = [tool, "--out", work] + args.variant_options
    print("profiling:", " ".join(command), file=sys.stderr, flush=True)
    done = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True)
    variants = []
    for line in done.stdout.splitlines():
        name, path, profiler_ms, analytic_ms = line.split("\t")
        variants.append((name, path, float(profiler_ms), float(analytic_ms)))
    return variants


def ort_latency_ms(path, args):
    """ORT's median milliseconds for one run of the model at `path`."""
    command = ["node", COMPARE_JS, path, "--threads", "1", "--level", "disabled",
               "--warmup", str(args.warmup), "--runs", str(args.runs)]
    done = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True)
    return float(json.loads(done.stdout.strip().splitlines()[-1])["median_ms_a"])


def ranks(values):
    """Ranks from 1, ties sharing the mean of the ranks they span."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            result[order[k]] = (start + end) / 2 + 1
        start = end + 1
    return result


def spearman(xs, ys):
    """Spearman's rho: Pearson's correlation of the ranks (ties averaged)."""
    rx, ry = ranks(xs), ranks(ys)
    n = len(xs)
    mx, my = sum(rx) / n, sum(ry) / n
    covariance = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    spread = (sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)) ** 0.5
    return covariance / spread if spread > 0 else float("nan")


def write_table(path, rows):
    """Writes the table to `path` through a temporary file and a rename."""
    folder = os.path.dirname(path)
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as out:
        out.write("variant\tprofiler_ms\tanalytic_ms\tort_ms\n")
        for name, profiler_ms, analytic_ms, ort_ms in rows:
            out.write(f"{name}\t{profiler_ms:.4f}\t{analytic_ms:.4f}\t{ort_ms:.4f}\n")
    os.replace(out.name, path)


def main():
    args = parse_args()
    work = os.path.abspath(args.work or os.path.join(args.build, "rank_correlation"))
    os.makedirs(work, exist_ok=True)
    rows = []
    for name, path, profiler_ms, analytic_ms in profile_variants(args, work):
        print(f"timing {name} in ONNX Runtime", file=sys.stderr, flush=True)
        rows.append((name, profiler_ms, analytic_ms, ort_latency_ms(path, args)))
        if not args.keep:
            os.remove(path)
    print(f"{'variant':<34}{'profiler ms':>14}{'analytic ms':>14}{'ORT ms':>12}")
    for name, profiler_ms, analytic_ms, ort_ms in rows:
        print(f"{name:<34}{profiler_ms:>14.3f}{analytic_ms:>14.3f}{ort_ms:>12.3f}")
    ort = [row[3] for row in rows]
    print(f"\n{len(rows)} variants")
    print(f"Spearman rho, CPU profiler vs ORT: {spearman([row[1] for row in rows], ort):.4f}")
    print(f"Spearman rho, analytic cpu vs ORT: {spearman([row[2] for row in rows], ort):.4f}")
    if len(rows) < MIN_VARIANTS:
        print(f"warning: fewer than {MIN_VARIANTS} variants", file=sys.stderr)
    write_table(os.path.join(work, "rank_correlation.tsv"), rows)


if __name__ == "__main__":
    main()
