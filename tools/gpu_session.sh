#!/usr/bin/env bash
# The GPU checks, as one script for a machine with an NVIDIA GPU (run from the repository
# root; results under $OUT, default gpu_out):
#   1. builds the CUDA configuration for this GPU's architecture (tests, CLI, plugin);
#   2. runs the CUDA tests: the cuDNN profiler, the nn backend, and the whole-graph executor
#      against the reference executor on every op kind and every zoo model;
#   3. optimises the zoo models TASO reports and the real exports in tests/data for
#      `--target cuda`, whose guard times input and candidates whole with the executor
#      (the reports hold the before/after medians);
#   4. records the GPU price table of those models (share/rlflow/costs/<gpu>-fp32.json).
# Each step's time limit keeps the whole within about ten minutes on 16 cores.
set -uo pipefail
out=${OUT:-gpu_out}
jobs=${JOBS:-$(nproc)}
mkdir -p "$out"
exec > >(tee "$out/gpu_session.log") 2>&1

nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv | tee "$out/gpu.csv"
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '. ')
start=$(date +%s)
step() { echo "== $1 ($(( $(date +%s) - start )) s)"; }

step "configure and build (sm_${arch})"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DRLFLOW_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" \
      -DRLFLOW_BUILD_BENCHMARKS=OFF -DRLFLOW_BUILD_EXAMPLES=OFF > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
timeout 420 cmake --build build-gpu -j"$jobs" --target rlflow_cuda_tests rlflow_cli rlflow_cuda_plugin > "$out/build.log" 2>&1 \
    || { grep -E "error|Error" "$out/build.log" | head -40; exit 1; }

step "CUDA tests"
timeout 240 build-gpu/tests/rlflow_cuda_tests --duration=true > "$out/cuda_tests.txt" 2>&1
tail -5 "$out/cuda_tests.txt"
grep -B3 -A12 "ERROR\|FAILED" "$out/cuda_tests.txt" | head -80

step "optimise for --target cuda, timed whole by the CUDA executor"
models=(zoo:squeezenet1_1 zoo:resnext50 zoo:inception_v3 zoo:bert tests/data/resnet50_op17.onnx
        tests/data/resnext50_32x4d_op17.onnx tests/data/inception_v3_op17.onnx tests/data/squeezenet1_1_op17.onnx)
for m in "${models[@]}"; do
    name=$(basename "${m#zoo:}" .onnx)
    timeout 120 build-gpu/tools/rlflow optimize "$m" --target cuda --time-limit 45 -o "$out/$name.onnx" \
        --report "$out/$name.json" > "$out/$name.log" 2>&1
    echo "$name: exit $?"
    python3 - "$out/$name.json" <<'EOF' 2>/dev/null || true
import json, sys
r = json.load(open(sys.argv[1]))
g = r.get("guard", {})
print("  guard:", g.get("decision"), "|", g.get("reason", "")[:160])
print("  before_ms/after_ms:", r.get("latency", {}) or {k: r.get(k) for k in ("before_ms", "after_ms")})
EOF
done

step "record the GPU price table"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr 'A-Z ' 'a-z-')
timeout 240 build-gpu/tools/rlflow costs record --target cuda --budget 200 -o "$out/${gpu}-fp32.json" \
    zoo:squeezenet1_1 zoo:resnext50 zoo:inception_v3 zoo:bert tests/data/resnet50_op17.onnx > "$out/costs_record.log" 2>&1
echo "costs record: exit $?"; tail -3 "$out/costs_record.log"
step "done"
