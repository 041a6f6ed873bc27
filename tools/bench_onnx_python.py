#!/usr/bin/python3
"""Times the Python ONNX round trip (onnx.load + onnx.save) that bench/onnx_bench.cpp is
compared with. Usage: /usr/bin/python3 tools/bench_onnx_python.py MODEL.onnx [RUNS]
Prints the median seconds and the peak resident memory of this process."""
import os
import resource
import statistics
import sys
import tempfile
import time

import onnx


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    path = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    times = []
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "out.onnx")
        for _ in range(runs):
            start = time.perf_counter()
            onnx.save(onnx.load(path), out)
            times.append(time.perf_counter() - start)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(f"{os.path.basename(path)}: onnx.load+onnx.save median {statistics.median(times) * 1000:.1f} ms "
          f"over {runs} runs, peak RSS {peak_mib:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
