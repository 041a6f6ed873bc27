#!/usr/bin/python3
"""Do rlflow's cost backends rank rewrites of a model as ONNX Runtime's latency does?

    /usr/bin/python3 tools/rank_correlation.py [--build BUILD_DIR] [--work DIR]
        [--models NAME...] [--walks N] [--focused-walks N] [--steps N]
        [--runs N] [--warmup W] [--sessions S] [--keep] [--table TSV] [-- OPTIONS OF rlflow_profile_variants...]

1. Real exports: resnet18, resnext50_32x4d (grouped convolutions), squeezenet1_1,
   inception_v3 and the 12-layer transformer from tests/data, plus mobilenet_v2,
   shufflenet_v2_x1_0 and efficientnet_b0 (depthwise convolutions), which
   tools/export_models.py writes into WORK/models (weight-free, opset 13) if missing.
2. BUILD_DIR/tools/rlflow_profile_variants makes variants of each: the export, --walks
   seeded random walks over the default rules, --focused-walks walks over the rewrites
   that change a convolution's or MatMul's arithmetic (grouped merges, enlarged kernels,
   merged MatMuls), and greedy search results; folds weight-only ops; writes each as ONNX
   and prices it with the CPU profiler, the analytic cpu preset and the ort backend (sum
   of op prices). Price caches are kept in WORK, so a rerun measures only what is new.
3. Each model's variants are timed whole in ONNX Runtime (tools/ort/worker.js) at the
   level the end-to-end guard uses, basic, with one thread, interleaved in one request:
   W warm-up runs each, then N rounds that run every variant once, so noise that lasts
   longer than a round hits all of them alike; that request is made S times, each in new
   sessions, and the median over them of ORT's median latency is the truth.
4. Reports, per model and overall, Spearman's rho between each backend's prediction and
   ORT's latency, and the median absolute percentage error (MdAPE) of the prediction.
   What a search needs is the ranking of rewrites *of one model*: rho over all variants
   of all models is high merely because big models are slow, so the median of the
   within-model rhos is the figure to read, next to each model's spread (slowest variant
   over fastest) and repeat (the export timed twice in the same rounds: the noise
   floor); where the spread is within the noise, no backend can rank. Writes WORK/rank_correlation.tsv (one line per
   variant) and WORK/rank_correlation.json (the summary).

With --table TSV, steps 1-3 are skipped and the report is made from a table written
before. Steps 2 and 3 run one after the other, never together, so no measurement shares
the CPU with another; still, run it on a quiet machine. ONNX files are deleted once timed
unless --keep. Needs node and tools/ort/node_modules (bash tools/setup.sh --test), a
build with the target rlflow_profile_variants, and Debian's python3-torch for step 1.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER_JS = os.path.join(SOURCE_DIR, "tools", "ort", "worker.js")
EXPORT_MODELS = os.path.join(SOURCE_DIR, "tools", "export_models.py")
TEST_DATA = os.path.join(SOURCE_DIR, "tests", "data")
# Committed real exports, and the depthwise CNNs exported on demand.
COMMITTED = ["resnet18", "resnext50_32x4d", "squeezenet1_1", "inception_v3", "transformer"]
EXPORTED = ["mobilenet_v2", "shufflenet_v2_x1_0", "efficientnet_b0"]
OPSET = 13
BACKENDS = ["profiler", "analytic", "ort_ops"]
# The figures are reported over at least this many variants of this many models.
MIN_VARIANTS, MIN_MODELS = 50, 5
# Threads and level of every ORT timing: what the end-to-end guard uses.
ORT_LEVEL, ORT_THREADS = "basic", 1


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(SOURCE_DIR, "build"), help="the CMake build folder")
    parser.add_argument("--work", help="folder for models, variants, caches and tables (default BUILD/rank_correlation)")
    parser.add_argument("--models", nargs="+", default=COMMITTED + EXPORTED, choices=COMMITTED + EXPORTED,
                        metavar="MODEL", help="real exports to make variants of (default: all)")
    parser.add_argument("--walks", type=int, default=8, help="random walks over the default rules per model")
    parser.add_argument("--focused-walks", type=int, default=3, help="walks over arithmetic-changing rules per model")
    parser.add_argument("--steps", type=int, default=24, help="most rewrites per walk")
    parser.add_argument("--runs", type=int, default=25, help="interleaved ORT rounds (timed runs per variant)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed ORT runs per variant")
    parser.add_argument("--sessions", type=int, default=3,
                        help="requests per model, each in new ORT sessions; a variant's time is their median")
    parser.add_argument("--keep", action="store_true", help="keep the ONNX files")
    parser.add_argument("--table", help="report from this rank_correlation.tsv instead of measuring")
    parser.add_argument("variant_options", nargs="*", help="passed to rlflow_profile_variants (after --)")
    return parser.parse_args()


def model_paths(args, work):
    """The ONNX file of every model, exporting the ones not in tests/data if missing."""
    folder = os.path.join(work, "models")
    missing = [m for m in args.models if m in EXPORTED and not os.path.exists(os.path.join(folder, f"{m}_op{OPSET}.onnx"))]
    if missing:
        command = ["/usr/bin/python3", EXPORT_MODELS, "--out", folder, "--opsets", str(OPSET), "--models"] + missing
        print("exporting:", " ".join(command), file=sys.stderr, flush=True)
        subprocess.run(command, check=True, stdout=sys.stderr)
    return [os.path.join(TEST_DATA if m in COMMITTED else folder, f"{m}_op{OPSET}.onnx") for m in args.models]


def profile_variants(args, work):
    """Runs rlflow_profile_variants; returns one dict per variant."""
    tool = os.path.join(args.build, "tools", "rlflow_profile_variants")
    if not os.access(tool, os.X_OK):
        sys.exit(f"rank_correlation: {tool} is missing; build the target rlflow_profile_variants")
    command = [tool, "--out", os.path.join(work, "variants"), "--onnx"] + model_paths(args, work) + [
        "--walks", str(args.walks), "--focused-walks", str(args.focused_walks), "--steps", str(args.steps),
        "--ort-cache", os.path.join(work, "ort_ops.cache"), "--profiler-cache", os.path.join(work, "profiler.cache"),
    ] + args.variant_options
    print("profiling:", " ".join(command), file=sys.stderr, flush=True)
    done = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True)
    variants = []
    for line in done.stdout.splitlines():
        model, variant, path, profiler_ms, analytic_ms, ort_ops_ms = line.split("\t")
        variants.append({"model": model, "variant": variant, "path": path, "profiler": float(profiler_ms),
                         "analytic": float(analytic_ms), "ort_ops": float(ort_ops_ms)})
    return variants


class Worker:
    """tools/ort/worker.js, spoken to over pipes (its protocol is in its header)."""

    def __init__(self):
        self.process = subprocess.Popen(["node", WORKER_JS], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        hello = json.loads(self.process.stdout.readline())
        if not hello.get("ready"):
            sys.exit(f"rank_correlation: ONNX Runtime is not usable: {hello.get('error')}")
        self.version = hello["ort_version"]
        self.next_id = 0

    def time(self, paths, runs, warmup):
        """Median ms of each model, timed interleaved; raises if one cannot be timed."""
        self.next_id += 1
        request = {"id": self.next_id, "cmd": "time", "models": paths, "level": ORT_LEVEL, "threads": ORT_THREADS,
                   "warmup": warmup, "runs": runs, "interleave": True, "seed": 0}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        while True:
            line = self.process.stdout.readline()
            if not line:
                sys.exit("rank_correlation: the ONNX Runtime worker died")
            answer = json.loads(line)
            if answer.get("id") == self.next_id:
                break
        if not answer.get("ok"):
            sys.exit(f"rank_correlation: the worker refused a request: {answer.get('error')}")
        for result in answer["results"]:
            if "error" in result:
                sys.exit(f"rank_correlation: {result['error']}")
        return [result["median_ms"] for result in answer["results"]]

    def close(self):
        self.process.stdin.close()
        self.process.wait()


def time_in_ort(variants, args):
    """Adds `ort_ms` to every variant: its model's variants timed interleaved."""
    worker = Worker()
    print(f"timing whole models in ONNX Runtime {worker.version} ({ORT_LEVEL}, {ORT_THREADS} thread)", file=sys.stderr)
    for model in sorted({v["model"] for v in variants}):
        group = [v for v in variants if v["model"] == model]
        print(f"timing {len(group)} variants of {model}", file=sys.stderr, flush=True)
        # The export is timed twice (first and last in each round): how far apart two
        # timings of one model fall is the noise floor the variants' spread is read against.
        original = next(v for v in group if v["variant"] == "original")
        # Each request loads every model into a new session: a session's time moves with
        # where its buffers landed, so the truth is the median over --sessions requests.
        requests = [worker.time([v["path"] for v in group] + [original["path"]], args.runs, args.warmup)
                    for _ in range(args.sessions)]
        times = [statistics.median(column) for column in zip(*requests)]
        for v, ms in zip(group, times):
            v["ort_ms"] = ms
            v["ort_ms_repeat"] = times[-1] if v is original else float("nan")
        if not args.keep:
            for v in group:
                os.remove(v["path"])
    worker.close()
    return worker.version


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
    """Spearman's rho: Pearson's correlation of the ranks (ties averaged); nan if undefined."""
    rx, ry = ranks(xs), ranks(ys)
    n = len(xs)
    mx, my = sum(rx) / n, sum(ry) / n
    covariance = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    spread = (sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)) ** 0.5
    return covariance / spread if spread > 0 else float("nan")


def mdape(predicted, measured):
    """Median absolute percentage error of `predicted` against `measured`."""
    return statistics.median(abs(p / m - 1) * 100 for p, m in zip(predicted, measured))


def summarise(variants):
    """Per model and overall: variant count, rho and MdAPE per backend."""
    def figures(group):
        truth = [v["ort_ms"] for v in group]
        row = {"variants": len(group)}
        for b in BACKENDS:
            predicted = [v[b] for v in group]
            usable = all(p == p for p in predicted)  # nan: the backend was not run
            row[f"rho_{b}"] = spearman(predicted, truth) if usable else float("nan")
            row[f"mdape_{b}"] = mdape(predicted, truth) if usable else float("nan")
        return row

    models = {m: figures([v for v in variants if v["model"] == m]) for m in sorted({v["model"] for v in variants})}
    for m, row in models.items():
        group = [v for v in variants if v["model"] == m]
        truth = [v["ort_ms"] for v in group]
        row["spread"] = (max(truth) / min(truth) - 1) * 100
        repeat = [abs(v["ort_ms_repeat"] / v["ort_ms"] - 1) * 100 for v in group if v.get("ort_ms_repeat", float("nan")) == v.get("ort_ms_repeat")]
        row["repeat"] = repeat[0] if repeat else float("nan")
    summary = {"models": models, "overall": figures(variants), "median_within_model_rho": {}}
    for b in BACKENDS:
        rhos = [row[f"rho_{b}"] for row in models.values() if row[f"rho_{b}"] == row[f"rho_{b}"]]
        summary["median_within_model_rho"][b] = statistics.median(rhos) if rhos else float("nan")
    return summary


def write_atomically(path, text):
    """Writes `text` to `path` through a temporary file and a rename."""
    with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(path), delete=False, suffix=".tmp") as out:
        out.write(text)
    os.replace(out.name, path)


TSV_COLUMNS = ["model", "variant", "profiler", "analytic", "ort_ops", "ort_ms", "ort_ms_repeat"]


def read_table(path):
    with open(path) as table:
        header = table.readline().rstrip("\n").split("\t")
        rows = [dict(zip(header, line.rstrip("\n").split("\t"))) for line in table if line.strip()]
    return [{k: (v if k in ("model", "variant") else float(v)) for k, v in row.items()} for row in rows]


def print_report(summary, variants):
    header = f"{'model':<26}{'variants':>9}" + "".join(f"{'rho ' + b:>14}" for b in BACKENDS) + "".join(
        f"{'MdAPE ' + b:>16}" for b in BACKENDS)
    print(header + f"{'spread':>9}{'repeat':>9}")
    for name, row in list(summary["models"].items()) + [("all (pooled)", summary["overall"])]:
        print(f"{name:<26}{row['variants']:>9}" + "".join(f"{row['rho_' + b]:>14.3f}" for b in BACKENDS)
              + "".join(f"{row['mdape_' + b]:>15.1f}%" for b in BACKENDS)
              + (f"{row['spread']:>8.1f}%{row['repeat']:>8.1f}%" if "spread" in row else ""))
    print("spread: how much slower the slowest variant of a model ran than its fastest; repeat: how far the"
          " export's two timings in the same rounds fell apart (the noise floor). Where the spread is near"
          " the noise, a within-model rho measures the noise, not the backend.")
    print(f"{'median within-model rho':<35}" + "".join(f"{summary['median_within_model_rho'][b]:>14.3f}" for b in BACKENDS))
    if len(variants) < MIN_VARIANTS or len(summary["models"]) < MIN_MODELS:
        print(f"warning: fewer than {MIN_VARIANTS} variants or {MIN_MODELS} models", file=sys.stderr)


def main():
    args = parse_args()
    work = os.path.abspath(args.work or os.path.join(args.build, "rank_correlation"))
    os.makedirs(os.path.join(work, "variants"), exist_ok=True)
    if args.table:
        variants, version = read_table(args.table), "(from " + args.table + ")"
    else:
        variants = profile_variants(args, work)
        version = time_in_ort(variants, args)
        write_atomically(os.path.join(work, "rank_correlation.tsv"), "\t".join(TSV_COLUMNS) + "\n" + "".join(
            "\t".join(str(v[c]) for c in TSV_COLUMNS) + "\n" for v in variants))
    summary = summarise(variants)
    summary["ort"] = {"version": version, "level": ORT_LEVEL, "threads": ORT_THREADS, "runs": args.runs,
                      "warmup": args.warmup, "sessions": args.sessions}
    summary["load_average"] = os.getloadavg()
    print_report(summary, variants)
    write_atomically(os.path.join(work, "rank_correlation.json"), json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
