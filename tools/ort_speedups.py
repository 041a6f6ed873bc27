#!/usr/bin/python3
"""Is `rlflow optimize`'s output faster than its input in ONNX Runtime?

    /usr/bin/python3 tools/ort_speedups.py [--build BUILD] [--work DIR] [--runs N]
        [--optimize-args "..."] MODEL.onnx... [--weight-free EXPORT.onnx...]

For every model: `rlflow optimize MODEL -o OUT --report R` with the default settings
(plus --optimize-args), then tools/ort/compare.js times the input and the output in
ONNX Runtime on the CPU, 1 thread, interleaved run by run (A, B, A, B, ...), at levels
basic and all, and takes the medians of --runs runs each (after 3 warm-up runs). The
outputs must agree (max relative difference printed). A weight-free export
(export_params=False, tests/data) is first given seeded random weights with
`rlflow weights ... --data-inputs input`, so ORT runs it as a model with initializers.

Prints one row per model and level (ORT ms before and after, after/before: below 1 is
faster) and writes WORK/ort_speedups.tsv. Slow (minutes): kept out of the unit tests.
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPARE_JS = os.path.join(SOURCE_DIR, "tools", "ort", "compare.js")
LEVELS = ("basic", "all")
WARMUP_RUNS = 3


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="*", help="ONNX models with their weights")
    parser.add_argument("--weight-free", nargs="*", default=[], help="weight-free exports (data input named 'input')")
    parser.add_argument("--build", default=os.path.join(SOURCE_DIR, "build"), help="the CMake build folder")
    parser.add_argument("--work", help="folder for models, reports and the table (default BUILD/ort_speedups)")
    parser.add_argument("--runs", type=int, default=30, help="timed ORT runs of each model per level")
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


def ort_pair(a, b, level, runs):
    """ORT's medians for a and b (interleaved) and their largest relative difference."""
    line = run(["node", COMPARE_JS, a, b, "--threads", "1", "--level", level, "--runs", str(runs),
                "--warmup", str(WARMUP_RUNS)]).strip().splitlines()[-1]
    j = json.loads(line)
    return float(j["median_ms_a"]), float(j["median_ms_b"]), j["max_rel_diff"]


def measure(rlflow, model, work, args):
    stem = os.path.basename(model).replace(".onnx", "")
    out = os.path.join(work, stem + ".opt.onnx")
    report_path = os.path.join(work, stem + ".report.json")
    run([rlflow, "optimize", model, "-o", out, "--report", report_path] + shlex.split(args.optimize_args))
    with open(report_path) as f:
        report = json.load(f)
    rows = []
    for level in LEVELS:
        before, after, diff = ort_pair(model, out, level, args.runs)
        rows.append((stem, level, report["guard"]["decision"], report["written"], before, after, after / before, diff))
    return rows


def write_table(path, rows):
    folder = os.path.dirname(path)
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as out:
        out.write("model\tlevel\tguard\twritten\tort_before_ms\tort_after_ms\tafter_over_before\tmax_rel_diff\n")
        for row in rows:
            out.write("\t".join(str(x) for x in row) + "\n")
    os.replace(out.name, path)


def main():
    args = parse_args()
    rlflow = os.path.join(args.build, "tools", "rlflow")
    work = os.path.abspath(args.work or os.path.join(args.build, "ort_speedups"))
    os.makedirs(work, exist_ok=True)
    models = list(args.models) + [with_weights(rlflow, e, work) for e in args.weight_free]
    rows = []
    for model in models:
        rows.extend(measure(rlflow, model, work, args))
    print(f"{'model':<34}{'level':>7}{'written':>10}{'before ms':>11}{'after ms':>10}{'after/before':>14}")
    for stem, level, _, written, before, after, ratio, _ in rows:
        print(f"{stem:<34}{level:>7}{written:>10}{before:>11.3f}{after:>10.3f}{ratio:>14.3f}")
    write_table(os.path.join(work, "ort_speedups.tsv"), rows)


if __name__ == "__main__":
    main()
