"""Optimise a torchvision model with rlflow and run it in ONNX Runtime.

    python3 examples/python/optimize_torchvision.py [--model resnet18] [--out DIR]

Exports the torchvision model to ONNX when PyTorch and torchvision are installed (else
builds rlflow's zoo copy of it, with random weights), optimises it with rlflow's default
search, cost and ONNX Runtime guard, writes it, and, when the onnxruntime package is
installed, runs both files and compares their outputs and latencies.
"""

import argparse
import pathlib
import time

import numpy as np

import rlflow


def export(model_name, path):
    """The torchvision export of `model_name`, or rlflow's zoo model when PyTorch is absent."""
    try:
        import torch
        import torchvision
    except ImportError:
        print(f"PyTorch/torchvision not installed: using rlflow's zoo:{model_name} (random weights)")
        rlflow.zoo(model_name).save(path)
        return
    model = getattr(torchvision.models, model_name)(weights=None).eval()
    torch.onnx.export(model, torch.randn(1, 3, 224, 224), str(path), opset_version=17,
                      input_names=["input"], output_names=["output"])
    print(f"exported torchvision {model_name} to {path}")


def median_ms(session, feeds, runs=20):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    return float(np.median(times))


def compare_in_onnxruntime(original, optimised, feeds):
    try:
        import onnxruntime as ort
    except ImportError:
        print("onnxruntime not installed: skipping the comparison (pip install onnxruntime)")
        return
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    before = ort.InferenceSession(str(original), options)
    after = ort.InferenceSession(str(optimised), options)
    for x, y in zip(before.run(None, feeds), after.run(None, feeds)):
        print(f"max |difference| of the outputs: {np.abs(x - y).max():.3g}")
    print(f"ONNX Runtime, 1 thread, median of 20: {median_ms(before, feeds):.2f} ms -> {median_ms(after, feeds):.2f} ms")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet18", help="a torchvision model that rlflow's zoo also has")
    parser.add_argument("--out", default=".", help="directory for the .onnx files")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    original, optimised = out / f"{args.model}.onnx", out / f"{args.model}.opt.onnx"
    export(args.model, original)

    g = rlflow.load(original)
    o, report = rlflow.optimize(g, progress=True)
    o.save(optimised)
    print(f"cost {report['cost_before_ms']:.3f} -> {report['cost_after_ms']:.3f} ms ({report['cost_backend']}); "
          f"written: {report['written']}; {report['stop']}")
    if report.get("ort_before_ms"):
        print(f"the guard timed {report['ort_before_ms']:.3f} -> {report['ort_after_ms']:.3f} ms in ONNX Runtime")
    print(f"wrote {optimised}")
    compare_in_onnxruntime(original, optimised, g.random_inputs(seed=0))


if __name__ == "__main__":
    main()
