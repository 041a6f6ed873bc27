#!/usr/bin/python3
"""Is `rlflow optimize`'s output faster than its input in ONNX Runtime, where users run it?

    /usr/bin/python3 tools/ort_speedups.py [--build BUILD] [--work DIR] [--runs N]
        [--optimize-args "..."] MODEL.onnx... [--weight-free EXPORT.onnx...]

For every model: `rlflow optimize MODEL -o OUT --report R` with the default settings
(plus --optimize-args): the default target, ONNX Runtime at level all with a thread per
physical core. Then tools/ort/compare.js times models in ONNX Runtime on the CPU,
interleaved run by run (the order swapped every round), intra-op spinning off in both
sessions (with it on, two sessions timed side by side steal each other's cores), after 3
warm-up runs, and takes the median over --runs rounds of the paired ratio:

  - noise: the input against itself at the default target (level all, ORT's own thread
    count). A model whose self-ratio is more than 2% from 1 does not count: the machine
    was too noisy to judge it.
  - target 1, target 2: the output against the input at the default target, in two
    separate comparisons (fresh sessions each).
  - basic t1: the output against the input at level basic with 1 thread.

Outputs must agree (max relative difference printed). A weight-free export
(export_params=False, tests/data) is first given seeded random weights with `rlflow
weights ... --data-inputs input`. Prints one row per model (ratios are output time over
input time: below 1 is faster) and writes WORK/ort_speedups.tsv. Slow (minutes): kept
out of the unit tests.
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPARE_JS = os.path.join(SOURCE_DIR, "tools", "ort", "compare.js")
WARMUP_RUNS = 3
# A self-comparison further than this from 1 means the machine was too noisy to judge.
NOISE_LIMIT = 0.02


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="*", help="ONNX models with their weights")
    parser.add_argument("--weight-free", nargs="*", default=[], help="weight-free exports (data input named 'input')")
    parser.add_argument("--build", default=os.path.join(SOURCE_DIR, "build"), help="the CMake build folder")
    parser.add_argument("--work", help="folder for models, reports and the table (default BUILD/ort_speedups)")
    parser.add_argument("--runs", type=int, default=30, help="timed ORT rounds of each comparison")
    parser.add_argument("--optimize-args", default="", help="extra arguments for rlflow optimize")
    return parser.parse_args()


def run(command):
    print("+", " ".join(command), file=sys.stderr, flush=True)
    return subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout


def with_weights(rlflow, export, work):
    """The export with seeded random weights, written into `work`."""
    out = os.path.join(work, os.path.basename(export).replace(".onnx", ".weights.onnx"))
    run([rlflow, "weights", export, out, "--data-inputs", "input"])
    return out


def ort_ratio(a, b, level, threads, runs):
    """compare.js's median paired ratio b/a, and the outputs' largest relative difference."""
    line = run(["node", COMPARE_JS, a, b, "--threads", str(threads), "--level", level, "--runs", str(runs),
                "--warmup", str(WARMUP_RUNS)]).strip().splitlines()[-1]
    j = json.loads(line)
    return float(j["median_ratio"]), j["max_rel_diff"]


def measure(rlflow, model, work, args):
    stem = os.path.basename(model).replace(".onnx", "")
    out = os.path.join(work, stem + ".opt.onnx")
    report_path = os.path.join(work, stem + ".report.json")
    start = time.monotonic()
    run([rlflow, "optimize", model, "-o", out, "--report", report_path] + shlex.split(args.optimize_args))
    seconds = time.monotonic() - start
    with open(report_path) as f:
        report = json.load(f)
    written = report["written"]
    if written == "optimised":
        written = "+".join(f"{rule}x{n}" for rule, n in report["rewrites"].items()) or "optimised"
        written += " [" + ",".join(report.get("proposed_by", [])) + "]"
    noise, _ = ort_ratio(model, model, "all", 0, args.runs)
    first, diff = ort_ratio(model, out, "all", 0, args.runs)
    second, _ = ort_ratio(model, out, "all", 0, args.runs)
    basic, _ = ort_ratio(model, out, "basic", 1, args.runs)
    counts = abs(noise - 1) <= NOISE_LIMIT
    return (stem, written, round(seconds, 1), noise, first, second, basic, diff, "yes" if counts else "no (noisy)")


def write_table(path, rows):
    folder = os.path.dirname(path)
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as out:
        out.write("model\twritten\toptimize_seconds\tnoise_all\tratio_all_1\tratio_all_2\tratio_basic_t1\tmax_rel_diff\tcounts\n")
        for row in rows:
            out.write("\t".join(str(x) for x in row) + "\n")
    os.replace(out.name, path)


def main():
    args = parse_args()
    rlflow = os.path.join(args.build, "tools", "rlflow")
    work = os.path.abspath(args.work or os.path.join(args.build, "ort_speedups"))
    os.makedirs(work, exist_ok=True)
    models = list(args.models) + [with_weights(rlflow, e, work) for e in args.weight_free]
    rows = [measure(rlflow, model, work, args) for model in models]
    print(f"{'model':<28}{'s':>6}{'noise':>8}{'all #1':>8}{'all #2':>8}{'basic t1':>10}  counts  written")
    for stem, written, seconds, noise, first, second, basic, _, counts in rows:
        print(f"{stem:<28}{seconds:>6.1f}{noise:>8.3f}{first:>8.3f}{second:>8.3f}{basic:>10.3f}  {counts:<6}  {written}")
    write_table(os.path.join(work, "ort_speedups.tsv"), rows)


if __name__ == "__main__":
    main()
