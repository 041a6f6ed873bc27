#!/usr/bin/python3
"""Does rlflow understand modern exports? Exports them, and checks what it makes of them.

    /usr/bin/python3 tools/real_models.py --build build [--work DIR] [--models NAME...]

For every model (default: tools/export_models.py's MODERN_MODELS: a windowed-attention
vision transformer, MobileNet-V3, a transformer encoder whose causal mask is computed
from the input's length, and one over int64 token ids whose padding mask is computed from
their values), exported at opset 17 with seeded random weights:
  1. `rlflow info --json`: the opaque nodes left, by type and reason, and the FLOPs, which
     must be within 2% of a count made with PyTorch (its profiler, and hooks for the
     activations and pools the profiler leaves out: export_models.count_flops);
  2. `rlflow optimize` with the default settings, then tools/ort/compare.js: the optimised
     model's output must equal the input model's in ONNX Runtime to 1e-4 of the output's
     scale.
Prints one JSON line per model and exits 1 if any check fails. Needs Debian's
/usr/bin/python3 (torch, torchvision, onnx) and tools/ort's onnxruntime-node.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools"))
import export_models  # noqa: E402

COMPARE_JS = os.path.join(SOURCE_DIR, "tools", "ort", "compare.js")
FLOP_TOLERANCE = 0.02
OUTPUT_TOLERANCE = 1e-4


def run(command):
    return subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout


def check(name, args):
    model, example = export_models.build(name, args.seed)
    path = os.path.join(args.work, f"{name}_op17.onnx")
    export_models.export(model, example, path, 17, True)
    reference_flops = export_models.count_flops(model, example)
    info = json.loads(run([args.rlflow, "info", path, "--json"]))
    optimized = os.path.join(args.work, f"{name}_optimized.onnx")
    run([args.rlflow, "optimize", path, "-o", optimized, "--report", optimized + ".json"])
    comparison = json.loads(run(["node", COMPARE_JS, path, optimized, "--runs", "3"]).strip().splitlines()[-1])
    flop_error = info["flops"] / reference_flops - 1
    result = {
        "model": name,
        "nodes": info["nodes"],
        "opaque_nodes": info["opaque_nodes"],
        "opaque_ops": [{k: group[k] for k in ("op_type", "count", "reason")} for group in info["opaque_ops"]],
        "flops": info["flops"],
        "pytorch_flops": reference_flops,
        "flop_error": round(flop_error, 5),
        "max_rel_diff": comparison["max_rel_diff"],
    }
    result["ok"] = abs(flop_error) <= FLOP_TOLERANCE and comparison["max_rel_diff"] <= OUTPUT_TOLERANCE
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build", help="rlflow's build folder (default: build)")
    parser.add_argument("--work", default=None, help="folder for the exports (default: a temporary one)")
    parser.add_argument("--models", nargs="+", default=export_models.MODERN_MODELS)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.rlflow = os.path.join(args.build, "tools", "rlflow")
    if not os.access(args.rlflow, os.X_OK):
        sys.exit(f"real_models.py: {args.rlflow} is not an executable; build rlflow first")
    with tempfile.TemporaryDirectory() as scratch:
        args.work = args.work or scratch
        os.makedirs(args.work, exist_ok=True)
        failed = 0
        for name in args.models:
            result = check(name, args)
            failed += 0 if result["ok"] else 1
            print(json.dumps(result), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
